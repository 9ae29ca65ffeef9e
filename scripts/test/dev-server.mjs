// Starts `wrangler dev` in its own process group on a given port and state folder, for the
// benchmarks, the load script and the end-to-end tests; stop() signals the whole group.
import { randomBytes } from "node:crypto";
import { wrangler, wranglerDone } from "../wrangler.mjs";

export async function startDevServer({ port, persistTo, vars = {}, inspectorPort }) {
	await wranglerDone(["d1", "migrations", "apply", "DB", "--local", "--persist-to", persistTo]);
	// Webhooks need a sealing key and the public origin, tokens a signing key; a throwaway
	// server gets throwaway ones.
	const key = () => randomBytes(32).toString("base64url");
	const all = { WEBHOOK_KEY: key(), TOKEN_KEY: key(), PUBLIC_URL: `http://127.0.0.1:${port}`, ...vars };
	const varArgs = Object.entries(all).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
	if (inspectorPort) varArgs.push("--inspector-port", String(inspectorPort));
	const child = wrangler(
		["dev", "--ip", "127.0.0.1", "--port", String(port), "--persist-to", persistTo, "--show-interactive-dev-session=false", ...varArgs],
		{ detached: true, stdio: ["ignore", "ignore", "inherit"] },
	);
	const url = `http://127.0.0.1:${port}`;
	const stop = () => {
		try {
			process.kill(-child.pid, "SIGTERM");
		} catch {}
	};
	for (let i = 0; i < 120; i++) {
		try {
			await fetch(`${url}/whoami`);
			return { url, stop };
		} catch {
			await new Promise((r) => setTimeout(r, 500));
		}
	}
	stop();
	throw new Error("wrangler dev did not start");
}

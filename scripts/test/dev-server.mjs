// Starts `wrangler dev` in its own process group on a given port (a free one when none is
// given) and state folder, for the benchmarks, the load script and the end-to-end tests;
// stop() signals the whole group. `entry` runs another Worker entry script in place of the
// product's (wrangler.toml's own bindings, vars and objects still apply), for a benchmark that
// wraps the product.
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { applyMigrations, wrangler } from "../wrangler.mjs";

// A port nobody listens on now on 127.0.0.1, from the system.
export function freePort() {
	return new Promise((resolve, reject) => {
		const server = createServer();
		server.once("error", reject);
		server.listen(0, "127.0.0.1", () => {
			const { port } = server.address();
			server.close(() => resolve(port));
		});
	});
}

// The port in the environment variable `name`, else a free one.
export async function portFrom(name, env = process.env) {
	const value = env[name];
	if (value === undefined || value === "") return freePort();
	const port = Number(value);
	if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name}=${value} is not a port`);
	return port;
}

export async function startDevServer({ port, persistTo, vars = {}, inspectorPort, entry }) {
	port ??= await freePort();
	await applyMigrations({ persistTo });
	// Webhooks need a sealing key and the public origin, tokens a signing key; a throwaway
	// server gets throwaway ones.
	const key = () => randomBytes(32).toString("base64url");
	const all = { WEBHOOK_KEY: key(), TOKEN_KEY: key(), PUBLIC_URL: `http://127.0.0.1:${port}`, ...vars };
	const varArgs = Object.entries(all).flatMap(([k, v]) => ["--var", `${k}:${v}`]);
	varArgs.push("--inspector-port", String(inspectorPort ?? (await freePort())));
	// wrangler.toml serves the product as its own build makes it, unbundled; another entry is
	// TypeScript that wrangler must bundle, the product's modules it imports with it.
	const entryArgs = entry === undefined ? [] : [entry, "--bundle"];
	const child = wrangler(
		[
			"dev",
			...entryArgs,
			"--ip",
			"127.0.0.1",
			"--port",
			String(port),
			"--persist-to",
			persistTo,
			"--show-interactive-dev-session=false",
			...varArgs,
		],
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

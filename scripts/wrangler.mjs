// Runs the project's own wrangler on the Node that runs this script, with the settings every
// local command wants (no network look-ups of Cloudflare's metadata, no telemetry).
import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";

const pkg = createRequire(import.meta.url).resolve("wrangler/package.json");
const bin = join(dirname(pkg), "bin", "wrangler.js");

export const quietEnv = { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" };

export function wrangler(args, options = {}) {
	return spawn(process.execPath, [bin, ...args], { stdio: "inherit", env: quietEnv, ...options });
}

export function wranglerDone(args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = wrangler(args, options);
		child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`wrangler ${args[0]} exited with ${code}`))));
	});
}

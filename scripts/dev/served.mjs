// Where `npm start` serves, so that the other dev scripts (bootstrap, webhook-listener,
// identity-provider) find the port without --url: written when it starts, removed when it
// stops. The process id tells a file left by a start that was killed outright from the server
// running now. findServer() is the one rule every script follows.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";

// In the checkout's own .wrangler/, whatever folder a script is started from.
export const SERVED = fileURLToPath(new URL("../../.wrangler/served.json", import.meta.url));
export const DEFAULT_ORIGIN = "http://127.0.0.1:8787";

export function writeServed(origin, file = SERVED) {
	mkdirSync(dirname(file), { recursive: true });
	writeFileSync(file, `${JSON.stringify({ origin, pid: process.pid })}\n`);
}

// The origin of the `npm start` still running, if any.
export function readServed(file = SERVED) {
	try {
		const { origin, pid } = JSON.parse(readFileSync(file, "utf8"));
		process.kill(pid, 0);
		return origin;
	} catch {
		return undefined;
	}
}

// Only its own: another `npm start` may have written the file since.
export function clearServed(file = SERVED) {
	try {
		if (JSON.parse(readFileSync(file, "utf8")).pid === process.pid) rmSync(file);
	} catch {
		// Already gone.
	}
}

// The server a dev script talks to: the --url given, else the `npm start` running in this
// checkout on whatever port, else the default port. Without a trailing slash.
export function findServer(url, file = SERVED) {
	return (url ?? readServed(file) ?? DEFAULT_ORIGIN).replace(/\/+$/, "");
}

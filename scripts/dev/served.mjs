// Where `npm start` serves, so that `npm run bootstrap` finds the port without --url: written
// when it starts, removed when it stops. The process id tells a file left by a start that was
// killed outright from the server running now.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";

export const SERVED = ".wrangler/served.json";

export function writeServed(origin) {
	mkdirSync(dirname(SERVED), { recursive: true });
	writeFileSync(SERVED, `${JSON.stringify({ origin, pid: process.pid })}\n`);
}

// The origin of the `npm start` still running, if any.
export function readServed() {
	try {
		const { origin, pid } = JSON.parse(readFileSync(SERVED, "utf8"));
		process.kill(pid, 0);
		return origin;
	} catch {
		return undefined;
	}
}

// Only its own: another `npm start` may have written the file since.
export function clearServed() {
	try {
		if (JSON.parse(readFileSync(SERVED, "utf8")).pid === process.pid) rmSync(SERVED);
	} catch {
		// Already gone.
	}
}

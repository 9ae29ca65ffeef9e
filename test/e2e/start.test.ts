import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The README's promise: `npm start`, then `npm run bootstrap`, gives a secret that works on
// /whoami. Run as a developer would, on a port of its own, which bootstrap finds without --url.
const PORT = 8796;
const URL_BASE = `http://127.0.0.1:${PORT}`;

describe("npm start and npm run bootstrap", () => {
	let server: ChildProcess;

	beforeAll(async () => {
		server = spawn("npm", ["start", "--", "--port", String(PORT)], { detached: true, stdio: "ignore" });
		for (let i = 0; i < 120; i++) {
			if (await fetch(`${URL_BASE}/whoami`).then(() => true, () => false)) return;
			await new Promise((resolve) => setTimeout(resolve, 500));
		}
		throw new Error("npm start did not serve");
	}, 90_000);

	afterAll(() => {
		if (server?.pid) process.kill(-server.pid, "SIGTERM");
	});

	it("prints a secret that works on /whoami", async () => {
		const { stdout } = await promisify(execFile)("npm", ["run", "-s", "bootstrap", "--", "--json"]);
		const created = JSON.parse(stdout);
		expect(Object.keys(created).sort()).toEqual(["account", "role", "secret", "user"]);
		const whoami = await fetch(`${URL_BASE}/whoami`, { headers: { authorization: created.secret } });
		expect(whoami.status).toBe(200);
		expect(await whoami.json()).toEqual({ account: created.account, user: created.user, role: created.role });
	}, 60_000);
});

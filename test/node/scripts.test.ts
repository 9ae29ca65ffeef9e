import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findServer, readServed, writeServed } from "../../scripts/dev/served.mjs";
import { planChromium } from "../../scripts/test/chromium.mjs";
import { portFrom } from "../../scripts/test/dev-server.mjs";
import { countMigrations, describeMigrations } from "../../scripts/wrangler.mjs";

// The scripts a user runs through npm: every `node scripts/....mjs` of package.json's scripts.
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const { scripts } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
const userScripts = [
	...new Set(
		Object.values(scripts).flatMap((command) => [...command.matchAll(/\bnode (scripts\/\S+\.mjs)/g)].map((m) => m[1])),
	),
].sort();

type Run = { code: number; stdout: string; stderr: string };
async function run(
	script: string,
	args: string[],
	env: Record<string, string | undefined> = {},
	cwd = ROOT,
): Promise<Run> {
	try {
		const { stdout, stderr } = await promisify(execFile)(process.execPath, [join(ROOT, script), ...args], {
			cwd,
			env: { ...process.env, ...env },
			timeout: 30_000,
		});
		return { code: 0, stdout, stderr };
	} catch (error) {
		const failed = error as { code: number; stdout: string; stderr: string };
		return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
	}
}

const STACK = /^\s+at \S/m;

describe("every script a user runs through npm", () => {
	it("is found in package.json", () => {
		expect(userScripts).toEqual(
			expect.arrayContaining([
				"scripts/dev/start.mjs",
				"scripts/dev/bootstrap.mjs",
				"scripts/dev/webhook-listener.mjs",
				"scripts/dev/identity-provider.mjs",
				"scripts/bench/load.mjs",
				"scripts/bench/bench.mjs",
				"scripts/deploy/deploy.mjs",
				"scripts/test/ensure-chromium.mjs",
				"scripts/wrangler.mjs",
			]),
		);
	});

	it.each(userScripts)(
		"%s answers --help with its usage and exit 0",
		async (script) => {
			const { code, stdout, stderr } = await run(script, ["--help"]);
			expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
			expect(stdout).toMatch(/^usage: /m);
			expect(stdout).not.toMatch(STACK);
		},
		30_000,
	);

	it.each(["scripts/dev/bootstrap.mjs", "scripts/dev/webhook-listener.mjs", "scripts/dev/start.mjs"])(
		"%s answers an unknown option with its usage and exit 2, no stack",
		async (script) => {
			const { code, stderr } = await run(script, ["--no-such-option"]);
			expect(code).toBe(2);
			expect(stderr).toMatch(/^usage: /m);
			expect(stderr).not.toMatch(STACK);
		},
	);
});

// npm prints the command line it runs: a secret passed as an argument would be on screen.
describe("secrets", () => {
	it.each([
		["scripts/dev/webhook-listener.mjs", ["--secret", "s3cret"], /TWIN_SECRET/],
		["scripts/dev/webhook-listener.mjs", ["--client-secret", "s3cret"], /--client-secret-file/],
		["scripts/dev/bootstrap.mjs", ["--admin-token", "s3cret"], /ADMIN_TOKEN/],
	])("%s refuses %j and names the ways that keep it off the command line", async (script, args, hint) => {
		const { code, stderr } = await run(script, args as string[], { TWIN_SECRET: "", ADMIN_TOKEN: "" });
		expect(code).toBe(2);
		expect(stderr).toMatch(hint);
		expect(stderr).not.toMatch(STACK);
	});
});

describe("npm run bootstrap", () => {
	const account = { account: "a", user: "u", role: "r", secret: "the-secret" };
	let server: ReturnType<typeof createServer>;
	let url: string;
	let dir: string;
	const seen: string[] = [];

	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), "bootstrap-"));
		server = createServer((req, res) => {
			seen.push(`${req.method} ${req.url} ${req.headers.authorization}`);
			res.writeHead(201, { "content-type": "application/json" }).end(JSON.stringify({ ...account, extra: 1 }));
		});
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
	});
	afterAll(() => {
		server.close();
		rmSync(dir, { recursive: true, force: true });
	});

	it("--json writes only the JSON to stdout, with the token from ADMIN_TOKEN", async () => {
		const { code, stdout, stderr } = await run("scripts/dev/bootstrap.mjs", ["--url", url, "--json"], {
			ADMIN_TOKEN: "from-env",
		});
		expect({ code, stderr }).toEqual({ code: 0, stderr: "" });
		expect(JSON.parse(stdout)).toEqual(account);
		expect(seen.at(-1)).toBe("POST /admin/accounts Bearer from-env");
	});

	it("--out writes the JSON to a file its owner alone reads, with the token from --admin-token-file", async () => {
		const tokenFile = join(dir, "token");
		const out = join(dir, "account.json");
		await import("node:fs").then(({ writeFileSync }) => writeFileSync(tokenFile, "from-file\n"));
		const { code, stdout } = await run(
			"scripts/dev/bootstrap.mjs",
			["--url", url, "--out", out, "--admin-token-file", tokenFile],
			{ ADMIN_TOKEN: "" },
		);
		expect(code).toBe(0);
		expect(stdout).toBe("");
		expect(JSON.parse(readFileSync(out, "utf8"))).toEqual(account);
		expect(statSync(out).mode & 0o077).toBe(0);
		expect(seen.at(-1)).toBe("POST /admin/accounts Bearer from-file");
	});
});

// bootstrap, webhook-listener and identity-provider find the running `npm start` the same way.
describe("findServer", () => {
	let dir: string;
	beforeAll(() => (dir = mkdtempSync(join(tmpdir(), "served-"))));
	afterAll(() => rmSync(dir, { recursive: true, force: true }));

	it("takes the --url given first, without its trailing slash", () => {
		const file = join(dir, "given.json");
		writeServed("http://127.0.0.1:9001", file);
		expect(findServer("https://registry.example/", file)).toBe("https://registry.example");
	});

	it("finds the port of the npm start still running", () => {
		const file = join(dir, "running.json");
		writeServed("http://127.0.0.1:9002", file);
		expect(readServed(file)).toBe("http://127.0.0.1:9002");
		expect(findServer(undefined, file)).toBe("http://127.0.0.1:9002");
	});

	it("ignores a file left by a start that is gone, and falls back to port 8787", async () => {
		const file = join(dir, "stale.json");
		const { writeFileSync } = await import("node:fs");
		// A process id that no process has: above the kernel's largest.
		writeFileSync(file, JSON.stringify({ origin: "http://127.0.0.1:9003", pid: 2 ** 22 + 1 }));
		expect(findServer(undefined, file)).toBe("http://127.0.0.1:8787");
		expect(findServer(undefined, join(dir, "absent.json"))).toBe("http://127.0.0.1:8787");
	});
});

describe("npm run test:e2e's browser", () => {
	const none = () => false;
	const only = (path: string) => (p: string) => p === path;

	it("is never installed without INSTALL_CHROMIUM=1, even as root with apt-get", () => {
		const plan = planChromium({ env: {}, exists: only("/usr/bin/apt-get"), cache: [], isRoot: true });
		expect(plan).toMatchObject({ action: "skip", message: expect.stringContaining("CHROMIUM_PATH=") });
	});

	it("is installed with INSTALL_CHROMIUM=1 only as root with apt-get", () => {
		expect(
			planChromium({ env: { INSTALL_CHROMIUM: "1" }, exists: only("/usr/bin/apt-get"), cache: [], isRoot: true }),
		).toMatchObject({ action: "install" });
		expect(planChromium({ env: { INSTALL_CHROMIUM: "1" }, exists: none, cache: [], isRoot: true })).toMatchObject({
			action: "skip",
		});
		expect(
			planChromium({ env: { INSTALL_CHROMIUM: "1" }, exists: only("/usr/bin/apt-get"), cache: [], isRoot: false }),
		).toMatchObject({ action: "skip" });
	});

	it("is CHROMIUM_PATH first, then the system's, then Playwright's cache", () => {
		const all = (p: string) => ["/opt/mine", "/usr/bin/chromium", "/cache/chrome"].includes(p);
		expect(planChromium({ env: { CHROMIUM_PATH: "/opt/mine" }, exists: all, cache: ["/cache/chrome"] })).toEqual({
			action: "use",
			path: "/opt/mine",
		});
		expect(planChromium({ env: {}, exists: all, cache: ["/cache/chrome"] })).toEqual({
			action: "use",
			path: "/usr/bin/chromium",
		});
		expect(planChromium({ env: {}, exists: only("/cache/chrome"), cache: ["/cache/chrome"] })).toEqual({
			action: "use",
			path: "/cache/chrome",
		});
		expect(planChromium({ env: { CHROMIUM_PATH: "/opt/gone" }, exists: all, cache: [] })).toMatchObject({
			action: "skip",
			message: expect.stringContaining("/opt/gone does not exist"),
		});
	});

	it("ensure-chromium.mjs installs nothing without the opt-in: a fake apt-get first on PATH is never run", async () => {
		const dir = mkdtempSync(join(tmpdir(), "apt-"));
		try {
			const { writeFileSync, chmodSync, existsSync } = await import("node:fs");
			const marker = join(dir, "ran");
			writeFileSync(join(dir, "apt-get"), `#!/bin/sh\ntouch ${marker}\n`);
			chmodSync(join(dir, "apt-get"), 0o755);
			const { code } = await run("scripts/test/ensure-chromium.mjs", [], {
				PATH: `${dir}:${process.env.PATH}`,
				CHROMIUM_PATH: join(dir, "no-chromium"),
				INSTALL_CHROMIUM: "",
			});
			expect(code).toBe(0);
			expect(existsSync(marker)).toBe(false);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});

describe("the end-to-end tests' ports", () => {
	it("come from the environment, else a free port", async () => {
		expect(await portFrom("E2E_X", { E2E_X: "8123" })).toBe(8123);
		expect(await portFrom("E2E_X", {})).toBeGreaterThan(0);
		await expect(portFrom("E2E_X", { E2E_X: "eighty" })).rejects.toThrow("E2E_X=eighty is not a port");
	});
});

describe("npm start's migrations", () => {
	it("are counted from wrangler's tables, once each, and none when it had nothing to apply", () => {
		const table =
			"│ 0000_init.sql │\n│ 0001_subscriptions.sql │\n│ 0000_init.sql │ ✅ │\n│ 0001_subscriptions.sql │ ✅ │";
		expect(countMigrations(table)).toBe(2);
		expect(countMigrations("✅ No migrations to apply!")).toBe(0);
	});

	it("are told in one line for every shard: one count when all took the same, else each shard's", () => {
		expect(describeMigrations({ DB_0: 28, DB_1: 28 })).toBe(
			"Applied 28 D1 migrations to the local databases DB_0, DB_1",
		);
		expect(describeMigrations({ DB_0: 1 })).toBe("Applied 1 D1 migration to the local database DB_0");
		expect(describeMigrations({ DB_0: 0, DB_1: 28 })).toBe(
			"Applied D1 migrations to the local databases: none to DB_0, 28 to DB_1",
		);
		expect(describeMigrations({ DB_0: 0, DB_1: 0 })).toBe("Every local database is up to date (DB_0, DB_1)");
	});
});

// npm start checks the SHARDS wrangler dev would run with, .dev.vars' over wrangler.toml's.
describe("npm start's shards", () => {
	it("refuses a SHARDS that leaves a bucket unmapped, naming the fault, and does nothing", async () => {
		const dir = mkdtempSync(join(tmpdir(), "start-"));
		try {
			const { writeFileSync } = await import("node:fs");
			const devVars = "SHARDS=0-127:DB_0\n";
			writeFileSync(join(dir, ".dev.vars"), devVars);
			const { code, stdout, stderr } = await run("scripts/dev/start.mjs", [], {}, dir);
			expect(code).toBe(1);
			expect(stderr).toBe("SHARDS is invalid: bucket 128 is not mapped\n");
			expect(stdout).toBe("");
			// No secret written, no migration applied.
			expect(readFileSync(join(dir, ".dev.vars"), "utf8")).toBe(devVars);
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
	});
});

describe("npm run shards:move", () => {
	const move = (args: string[]) =>
		run("scripts/shards-move.mjs", args, { ADMIN_TOKEN: "a-token-of-at-least-32-characters-long" });

	it.each([
		[["--bucket", "256", "--to", "DB_1"], "--bucket must be a bucket, 0-255"],
		[["--bucket", "x", "--to", "DB_1"], "--bucket must be a bucket, 0-255"],
		[["--to", "DB_1"], "--bucket must be a bucket, 0-255"],
		[["--bucket", "3", "--to", "DB_7"], "--to must name a D1 binding wrangler.toml declares: DB_0, DB_1"],
		[["--bucket", "3"], "--to must name a D1 binding wrangler.toml declares"],
	])("refuses %j, naming why, and does nothing", async (args, message) => {
		const { code, stdout, stderr } = await move(args);
		expect(code).toBe(1);
		expect(stderr).toContain(message);
		expect(stdout).toBe("");
	});

	it("names an unreachable server and exits non-zero, wrangler.toml untouched", async () => {
		const before = readFileSync(join(ROOT, "wrangler.toml"), "utf8");
		const { code, stderr } = await move(["--bucket", "3", "--to", "DB_1", "--url", "http://127.0.0.1:9"]);
		expect(code).toBe(1);
		expect(stderr).toMatch(/The server at http:\/\/127\.0\.0\.1:9 is unreachable/);
		expect(stderr).not.toMatch(STACK);
		expect(readFileSync(join(ROOT, "wrangler.toml"), "utf8")).toBe(before);
	});
});

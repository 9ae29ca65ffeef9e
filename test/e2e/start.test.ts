import { type ChildProcess, execFile, spawn } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Batch, type BatchResult, createClient, type Twin, TwinRegistryError } from "../../client/src/index";
import { portFrom } from "../../scripts/test/dev-server.mjs";

// The README's promise: `npm start`, then `npm run bootstrap`, gives a secret that works on
// /whoami. Run as a developer would, on a port of its own (E2E_START_PORT, else a free one),
// which bootstrap finds without --url.
const PORT = await portFrom("E2E_START_PORT");
const URL_BASE = `http://127.0.0.1:${PORT}`;

describe("npm start and npm run bootstrap", () => {
	let server: ChildProcess;
	// What npm start printed, line by line.
	const printed: string[] = [];

	beforeAll(async () => {
		server = spawn("npm", ["start", "--", "--port", String(PORT)], {
			detached: true,
			stdio: ["ignore", "pipe", "ignore"],
		});
		let partial = "";
		server.stdout?.on("data", (chunk: Buffer) => {
			const lines = (partial + chunk.toString("utf8")).split("\n");
			partial = lines.pop() ?? "";
			printed.push(...lines);
		});
		for (let i = 0; i < 120; i++) {
			if (
				await fetch(`${URL_BASE}/whoami`).then(
					() => true,
					() => false,
				)
			)
				return;
			await new Promise((resolve) => setTimeout(resolve, 500));
		}
		throw new Error("npm start did not serve");
	}, 90_000);

	afterAll(() => {
		if (server?.pid) process.kill(-server.pid, "SIGTERM");
	});

	let created: { account: string; user: string; role: string; secret: string };

	it("prints a secret that works on /whoami", async () => {
		// No --url: bootstrap finds the port npm start serves on.
		const { stdout } = await promisify(execFile)("npm", ["run", "-s", "bootstrap", "--", "--json"]);
		created = JSON.parse(stdout);
		expect(Object.keys(created).sort()).toEqual(["account", "role", "secret", "user"]);
		const client = createClient({ baseUrl: URL_BASE, credential: created.secret });
		expect(await client.get("/whoami")).toEqual({ account: created.account, user: created.user, role: created.role });
	}, 60_000);

	it("prints one line for its migrations and one line per request, the service's own", async () => {
		const response = await fetch(`${URL_BASE}/whoami`, { headers: { authorization: created.secret } });
		const trace = response.headers.get("x-request-id")!;
		for (let i = 0; i < 50 && !printed.some((line) => line.includes(trace)); i++) {
			await new Promise((resolve) => setTimeout(resolve, 100));
		}
		expect(printed.filter((line) => line.includes(trace))).toEqual([expect.stringContaining('"route":"/whoami"')]);
		// wrangler's own line for the same requests is dropped.
		expect(printed.filter((line) => /\bGET \/whoami 200\b/.test(line))).toEqual([]);
		expect(
			printed.filter((line) => /D1 migrations? to the local database|local database is up to date/.test(line)),
		).toHaveLength(1);
	}, 30_000);

	// The typed client (client/), generated from the document the running service serves.
	it("serves what the typed client expects: twins, a scan page by page, ledger lists, refusals", async () => {
		const client = createClient({ baseUrl: URL_BASE, credential: created.secret });
		const twins = [];
		for (const site of ["north", "south", "east"])
			twins.push(await client.post("/twins", { body: { description: { site } } }));
		expect(twins.map((twin) => twin.status)).toEqual(["alive", "alive", "alive"]);

		// count 2 over three twins: the iterator follows the cursor to the second page.
		const scanned: string[] = [];
		for await (const uuid of client.scanTwins({ count: 2 })) scanned.push(uuid);
		expect(scanned.sort()).toEqual(twins.map((twin) => twin.uuid).sort());
		const described = [];
		for await (const twin of client.scanTwins({ count: 2, details: true, match: "TWIN.site == 'south'" }))
			described.push(twin.description);
		expect(described).toEqual([{ site: "south" }]);

		// A list in a query travels as one comma-separated value.
		const path = { twin: twins[0].uuid, ledger: "personal" };
		await client.post("/twins/{twin}/ledgers/{ledger}", {
			params: { path },
			body: { entries: { a: { value: 1 }, b: { value: 2 }, c: { value: 3 } } },
		});
		const read = await client.get("/twins/{twin}/ledgers/{ledger}/value", {
			params: { path, query: { entries: ["a", "c"] } },
		});
		expect(Object.keys(read.entries).sort()).toEqual(["a", "c"]);

		const refusal = await client
			.get("/twins/{twin}", { params: { path: { twin: crypto.randomUUID() } } })
			.catch((error: unknown) => error);
		expect(refusal).toBeInstanceOf(TwinRegistryError);
		expect(refusal).toMatchObject({ status: 404, subcode: 404102 });
		expect((refusal as TwinRegistryError).trace).toMatch(/\S/);
		const invalid = await client
			.get("/twins", { params: { query: { count: 0 } } })
			.catch((error: TwinRegistryError) => error);
		expect(invalid).toMatchObject({ status: 400, subcode: 400101, details: [{ path: "count" }] });
		const anonymous = await createClient({ baseUrl: URL_BASE })
			.get("/whoami")
			.catch((error: TwinRegistryError) => error);
		expect(anonymous).toMatchObject({ status: 401, subcode: 401101 });
	}, 60_000);

	// query_timeseries_table through the typed client: typed parameters, a typed page, and the
	// pages of one query walked by queryTimeseries (docs/timeseries.md, "Queries").
	it("serves a Timeseries table's points to the typed client, raw, by step and page by page", async () => {
		const client = createClient({ baseUrl: URL_BASE, credential: created.secret });
		const { timeseries } = await client.post("/account/services/timeseries", {
			body: {
				timeseries: {
					temps: {
						dimensions: { names: ["site"], types: ["text"] },
						measurements: { names: ["celsius"], types: ["float"] },
						rollups: [{ step: "1m", retention: "INF" }],
					},
				},
			},
		});
		expect(timeseries.temps).toMatchObject({ status: "ready", rollups: [{ step: "1m", retention: "INF" }] });

		// Three readings at device times in the hour before this one, the last one out of order.
		const base = Math.floor(Date.now() / 1000 / 3600) * 3600 - 3600;
		const twin = await client.post("/twins", { body: { description: { site: "north" } } });
		const path = { twin: twin.uuid, ledger: "personal" };
		const feed = {
			temps: { measurement: "celsius", dimensions: { site: "{LEDGER[site]}" }, timestamp: "{LEDGER[at]}" },
		};
		await client.post("/twins/{twin}/ledgers/{ledger}", {
			params: { path },
			body: { entries: { site: { value: "north" }, at: { value: base + 5 }, t: { value: 21.5, timeseries: feed } } },
		});
		for (const [offset, value] of [
			[80, 22.5],
			[40, 22],
		])
			await client.patch("/twins/{twin}/ledgers/{ledger}", {
				params: { path },
				body: { entries: { at: { value: base + offset }, t: { value } } },
			});

		const raw = await client.get("/account/services/timeseries/{timeseries}/data", {
			params: { path: { timeseries: "temps" }, query: { ge: base, le: base + 300, consistent: true } },
		});
		const {
			cursor,
			resolution,
			columns,
			rows,
		}: { cursor: string | null; resolution: string; columns: string[]; rows: unknown[][] } = raw;
		expect({ cursor, resolution, columns, rows }).toEqual({
			cursor: null,
			resolution: "raw",
			columns: ["_timestamp", "twin", "site", "celsius"],
			rows: [
				[base + 5, twin.uuid, "north", 21.5],
				[base + 40, twin.uuid, "north", 22],
				[base + 80, twin.uuid, "north", 22.5],
			],
		});

		const minutes = await client.get("/account/services/timeseries/{timeseries}/data", {
			params: {
				path: { timeseries: "temps" },
				query: { ge: base, le: base + 179, step: "1m", aggregates: "count,max", fill: "null", consistent: true },
			},
		});
		expect(minutes).toEqual({
			cursor: null,
			resolution: "1m",
			columns: ["_timestamp", "celsius.count", "celsius.max"],
			rows: [
				[base, 2, 22],
				[base + 60, 1, 22.5],
				[base + 120, 0, null],
			],
		});

		// count 1: the helper follows each cursor to the null one; every page says its tier.
		const pages = [];
		for await (const page of client.queryTimeseries("temps", {
			ge: base,
			le: base + 300,
			measurements: "celsius",
			count: 1,
		}))
			pages.push(page);
		expect(pages.map((page) => page.resolution)).toEqual(pages.map(() => "raw"));
		expect(pages.flatMap((page) => page.rows).map((row) => row[0])).toEqual([base + 5, base + 40, base + 80]);
		expect(pages.at(-1)?.cursor).toBeNull();
		expect(pages.slice(0, -1).every((page) => typeof page.cursor === "string")).toBe(true);

		// A refusal is thrown with its details: fill needs a step.
		const refusal = await client
			.get("/account/services/timeseries/{timeseries}/data", {
				params: { path: { timeseries: "temps" }, query: { ge: base, le: base + 60, fill: "null" } },
			})
			.catch((error: unknown) => error);
		expect(refusal).toMatchObject({ status: 400, subcode: 400101, details: [{ path: "fill" }] });
	}, 60_000);

	// A batch through the typed client: its lines uploaded as NDJSON with their SHA-256, the job
	// followed to its end as the service runs it in the background, and its results read back.
	it("runs a file batch the typed client created, followed and read the results of", async () => {
		const client = createClient({ baseUrl: URL_BASE, credential: created.secret });
		const sites = ["batch-north", "batch-south", "batch-east"];
		const made = await client.createBatch({
			operation: "create_twin",
			lines: sites.map((site) => ({ body: { description: { site } } })),
			description: { purpose: "e2e" },
		});
		expect(made).toMatchObject({ operation: "create_twin", description: { purpose: "e2e" } });
		expect(made.hash).toMatch(/^[0-9a-f]{64}$/);

		const seen: Batch[] = [];
		for await (const batch of client.followBatch(made.batch, {
			intervalMs: 250,
			signal: AbortSignal.timeout(50_000),
		}))
			seen.push(batch);
		const done = seen.at(-1)!;
		expect(done).toMatchObject({
			batch: made.batch,
			status: "completed",
			progress: { lines: 3, done: 3, succeeded: 3, failed: 0 },
		});
		expect(done.results?.url).toMatch(/^http/);
		// Each record yielded differs from the one before it in status or progress.
		for (const [i, batch] of seen.entries())
			if (i > 0) expect([batch.status, batch.progress]).not.toEqual([seen[i - 1].status, seen[i - 1].progress]);

		const results: BatchResult[] = [];
		for await (const result of client.batchResults(done)) results.push(result);
		expect(results.map(({ line, status }) => [line, status])).toEqual([
			[1, 201],
			[2, 201],
			[3, 201],
		]);
		const twins = results.map(({ body }) => body as Twin);
		expect(twins.map((twin) => twin.description)).toEqual(sites.map((site) => ({ site })));
		for (const [i, twin] of twins.entries())
			expect(await client.get("/twins/{twin}", { params: { path: { twin: twin.uuid } } })).toMatchObject({
				uuid: twin.uuid,
				status: "alive",
				description: { site: sites[i] },
			});
	}, 60_000);
});

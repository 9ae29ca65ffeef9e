import { env } from "cloudflare:workers";
import { runDurableObjectAlarm } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { call, expectError } from "../support/requests";
import { newTwin } from "../support/twins";
import { fireAccountAlarm, objectEnv } from "../support/objects";
import { until } from "../support/waiting";
import { dbOf } from "../support/shards";
import { logLines } from "../log/helpers";
import { loggedErrors } from "../support/faults";
import { chunkClient, chunkName } from "../../src/timeseries/chunk-client";
import { createTables, definition, table, timeseriesPath, walk } from "./helpers";

// What happens to points after their write (docs/timeseries.md, "Storage and consistency"):
// deliveries that fail and are run again, dropped points, retention, fills of added tiers,
// truncate and delete emptying their chunk objects, and the bound on chunk objects per page.

const DAY = 86_400;
// 2026-01-01T00:00:00Z.
const BASE = 1_767_225_600;
const FEED = { temps: { measurement: "celsius", timestamp: "{LEDGER[at]}" } };

// A table and a twin whose entry `t` feeds it, at the times given (seconds since BASE).
async function setup(points: [offset: number, value: number][], extra: Record<string, unknown> = {}) {
	const admin = await bootstrap();
	await createTables(admin.secret, { temps: definition(extra) });
	const twin = await newTwin(admin.secret);
	for (const [i, [offset, value]] of points.entries()) await write(admin.secret, twin, BASE + offset, value, i === 0);
	return { admin, twin };
}

async function write(secret: string, twin: string, at: number, value: number, first = false) {
	const entries = { at: { value: at }, t: first ? { value, timeseries: FEED } : { value } };
	const res = await call(first ? "POST" : "PATCH", `/twins/${twin}/ledgers/personal`, { secret, body: { entries } });
	expect(res.status, JSON.stringify(res.body)).toBe(first ? 201 : 200);
}

const ALL = { ge: BASE, le: BASE + 30 * DAY, measurements: "celsius" };
const values = async (secret: string, query: Record<string, string | number | boolean> = {}) =>
	(await walk(secret, "temps", { ...ALL, consistent: true, ...query })).rows.map((row) => row[row.length - 1]);

// The chunk objects of the account's tables, and the rows each holds.
async function chunks(account: string) {
	const { results } = await dbOf(account)
		.prepare('SELECT "table", generation, start FROM timeseries_chunks WHERE account = ? ORDER BY start')
		.bind(account)
		.all<{ table: string; generation: number; start: number }>();
	return results;
}
const held = (c: { table: string; generation: number; start: number }) =>
	chunkClient(env, chunkName(c.table, c.generation, c.start)).status();

// Chunk objects that always fail, in the account's object's environment until undone.
const failing = {
	getByName: () => ({
		insert: () => Promise.reject(new Error("chunk object unavailable")),
	}),
};

describe("Timeseries deliveries", () => {
	it("delivers once the chunk objects answer again, each point exactly once", async () => {
		const { admin, twin } = await setup([[0, 1]]);
		const logged = loggedErrors();
		const undo = await objectEnv(admin.account, { TIMESERIES: failing });
		await write(admin.secret, twin, BASE + 60, 2);
		await write(admin.secret, twin, BASE + 120, 3);
		// Still failing: a consistent query says so rather than answer without them.
		const late = await call("GET", timeseriesPath("temps", `/data?ge=${BASE}&le=${BASE + DAY}&consistent=true`), {
			secret: admin.secret,
		});
		expectError(late, 503, 503221);
		expect(late.headers.get("retry-after")).toBe("1");
		await undo();
		expect(logged.mock.calls.some(([line]) => String(line).includes("chunk object unavailable"))).toBe(true);
		expect(await values(admin.secret)).toEqual([1, 2, 3]);
		// The timer's drain finds nothing more to do, and nothing is stored twice.
		await fireAccountAlarm(admin.account);
		expect(await values(admin.secret)).toEqual([1, 2, 3]);
		expect((await table(admin.secret, "temps")).stats.rows).toBe(3);
	});

	it("writes one log line per dropped point: no timestamp, late, future, chunk full", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, { temps: definition({ retention: "1D" }) });
		const twin = await newTwin(admin.secret);
		const now = Math.floor(Date.now() / 1000);
		await write(admin.secret, twin, now - 60, 1, true);
		const res = await call("PATCH", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { at: { value: "not a time" }, t: { value: 2 } } },
		});
		expect(res.status).toBe(200);
		await write(admin.secret, twin, now - 3 * DAY, 3);
		await write(admin.secret, twin, now + 3600, 4);
		const undo = await objectEnv(admin.account, { MAX_TIMESERIES_CHUNK_BYTES: 1 });
		await write(admin.secret, twin, now - 30, 5);
		const window = { ge: now - DAY, le: now + 600 };
		expect(await values(admin.secret, window)).toEqual([1]);
		await undo();
		const reasons = (await logLines(admin.secret))
			.filter((line) => line.startsWith("Timeseries point dropped"))
			.map((line) => /reason=\[([^\]]+)\]/.exec(line)?.[1]);
		expect(reasons.sort()).toEqual(["chunk full", "future", "late", "no timestamp"]);
		const record = await table(admin.secret, "temps");
		expect(record.stats.rows).toBe(1);
		expect(record.status).toBe("full");
	});
});

describe("Timeseries retention, fills, truncate and delete", () => {
	it("answers a shorter retention at once, and the chunk's alarm then empties its object", async () => {
		const { admin } = await setup([
			[0, 1],
			[60, 2],
		]);
		expect(await values(admin.secret)).toEqual([1, 2]);
		const patched = await call("PATCH", timeseriesPath("temps"), { secret: admin.secret, body: { retention: "1D" } });
		expect(patched.status).toBe(200);
		expect(await values(admin.secret)).toEqual([]);
		const [only] = await chunks(admin.account);
		expect((await held(only!)).rows).toBe(2);
		await runDurableObjectAlarm(env.TIMESERIES.getByName(chunkName(only!.table, only!.generation, only!.start)));
		expect(await held(only!)).toEqual({ tiers: {}, rows: 0, bytes: 0 });
		expect((await table(admin.secret, "temps")).stats.rows).toBe(0);
	});

	it("fills an added rollup tier from the points kept, then answers from it", async () => {
		const points: [number, number][] = Array.from({ length: 30 }, (_, i) => [i * 50, i]);
		const { admin } = await setup(points);
		const step = { step: "5m", aggregates: "count,sum,min,max,first,last" };
		const before = await walk(admin.secret, "temps", { ...ALL, ...step, consistent: true });
		expect(before.pages[0]!.resolution).toBe("raw");
		const patched = await call("PATCH", timeseriesPath("temps"), {
			secret: admin.secret,
			body: { rollups: [{ step: "5m", retention: "INF" }] },
		});
		expect(patched.body.status).toBe("building");
		// Not read until filled.
		expect((await walk(admin.secret, "temps", { ...ALL, ...step })).pages[0]!.resolution).toBe("raw");
		await until(
			async () => {
				await fireAccountAlarm(admin.account);
				return (await table(admin.secret, "temps")).status;
			},
			(status) => status === "ready",
			"the fill of the 5m tier",
		);
		const after = await walk(admin.secret, "temps", { ...ALL, ...step });
		expect(after.pages[0]!.resolution).toBe("5m");
		expect(after.rows).toEqual(before.rows);
	});

	for (const [how, method, tail] of [
		["truncate", "DELETE", "/data"],
		["delete", "DELETE", ""],
	] as const) {
		it(`empties the chunk objects of a table after its ${how}`, async () => {
			const { admin } = await setup([
				[0, 1],
				[2 * DAY, 2],
				[9 * DAY, 3],
			]);
			expect(await values(admin.secret)).toEqual([1, 2, 3]);
			const found = await chunks(admin.account);
			expect(found.length).toBe(2);
			expect((await call(method, timeseriesPath("temps", tail), { secret: admin.secret })).status).toBe(200);
			await fireAccountAlarm(admin.account);
			expect(await chunks(admin.account)).toEqual([]);
			for (const c of found) expect(await held(c)).toEqual({ tiers: {}, rows: 0, bytes: 0 });
			if (how === "truncate") expect(await values(admin.secret)).toEqual([]);
		});
	}

	it("calls at most 16 chunk objects a page, and a walk still meets every point once", async () => {
		const points: [number, number][] = Array.from({ length: 20 }, (_, i) => [i * DAY, i]);
		const { admin } = await setup(points, { chunk: "1D" });
		const { rows, pages } = await walk(admin.secret, "temps", { ...ALL, consistent: true });
		expect(rows.map((row) => row[row.length - 1])).toEqual(points.map(([, v]) => v));
		expect(pages.length).toBeGreaterThan(1);
		const first = await call("GET", timeseriesPath("temps", `/data?ge=${ALL.ge}&le=${ALL.le}`), {
			secret: admin.secret,
		});
		expect(first.headers.get("server-timing")).toMatch(/tsdb;dur=\d+;desc="objects=16 rows_read=16"/);
		expect(first.body.rows).toHaveLength(16);
	});
});

import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { call, expectError } from "../support/requests";
import { newTwin } from "../support/twins";
import { createTables, definition, query, walk } from "./helpers";

// query_timeseries_table (docs/timeseries.md, "Queries"): raw points and buckets, the tier that
// answers, late points in every tier, fill, paging and its bounds.

// 2026-01-01T00:00:00Z: whole hours and days from here.
const BASE = 1_767_225_600;
const FEED = { temps: { measurement: "celsius", dimensions: { site: "{LEDGER[site]}" }, timestamp: "{LEDGER[at]}" } };

// A table with 1m and 1h rollups, and a twin whose entry `t` feeds it at the times given.
async function setup(points: [seconds: number, value: number, site?: string][]) {
	const admin = await bootstrap();
	await createTables(admin.secret, {
		temps: definition({
			rollups: [
				{ step: "1m", retention: "INF" },
				{ step: "1h", retention: "INF" },
			],
		}),
	});
	const twin = await newTwin(admin.secret);
	let first = true;
	for (const [offset, value, site = "north"] of points) {
		const entries = {
			at: { value: BASE + offset },
			site: { value: site },
			t: first ? { value, timeseries: FEED } : { value },
		};
		const res = await call(first ? "POST" : "PATCH", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(first ? 201 : 200);
		first = false;
	}
	return { admin, twin };
}

const RANGE = { ge: BASE, le: BASE + 7200, consistent: true };

describe("query_timeseries_table", () => {
	it("answers raw points by _timestamp, and buckets from the coarsest tier that fits", async () => {
		const { admin, twin } = await setup([
			[90, 3],
			[0, 1],
			[30, 2],
			[3700, 10],
		]);
		const raw = await walk(admin.secret, "temps", { ...RANGE, measurements: "celsius" });
		expect(raw.pages[0]!.resolution).toBe("raw");
		expect(raw.rows).toEqual([
			[BASE, twin, "north", 1],
			[BASE + 30, twin, "north", 2],
			[BASE + 90, twin, "north", 3],
			[BASE + 3700, twin, "north", 10],
		]);
		const minutes = await walk(admin.secret, "temps", {
			...RANGE,
			step: "1m",
			measurements: "celsius",
			aggregates: "count,avg,min,max,first,last",
		});
		expect(minutes.pages[0]!.resolution).toBe("1m");
		expect(minutes.pages[0]!.columns).toEqual([
			"_timestamp",
			"celsius.count",
			"celsius.avg",
			"celsius.min",
			"celsius.max",
			"celsius.first",
			"celsius.last",
		]);
		expect(minutes.rows).toEqual([
			[BASE, 2, 1.5, 1, 2, 1, 2],
			[BASE + 60, 1, 3, 3, 3, 3, 3],
			[BASE + 3660, 1, 10, 10, 10, 10, 10],
		]);
		const hours = await walk(admin.secret, "temps", {
			...RANGE,
			step: "1h",
			measurements: "celsius",
			aggregates: "count,sum",
		});
		expect(hours.pages[0]!.resolution).toBe("1h");
		expect(hours.rows).toEqual([
			[BASE, 3, 6],
			[BASE + 3600, 1, 10],
		]);
		// A step no tier divides reads the raw points, and answers the same buckets.
		const odd = await walk(admin.secret, "temps", {
			...RANGE,
			step: "45s",
			measurements: "celsius",
			aggregates: "count",
		});
		expect(odd.pages[0]!.resolution).toBe("raw");
		expect(odd.rows.map((row) => row[1]).reduce((a, b) => (a as number) + (b as number), 0)).toBe(4);
	});

	it("puts a late point into every tier at once", async () => {
		const { admin, twin } = await setup([
			[3700, 10],
			[0, 1],
		]);
		const late = await call("PATCH", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { at: { value: BASE + 20 }, t: { value: 5 } } },
		});
		expect(late.status).toBe(200);
		for (const step of ["1m", "1h"]) {
			const { rows, pages } = await walk(admin.secret, "temps", {
				...RANGE,
				step,
				measurements: "celsius",
				aggregates: "count,sum",
			});
			expect(pages[0]!.resolution).toBe(step);
			expect(rows[0]!.slice(1)).toEqual([2, 6]);
		}
	});

	it("groups by a dimension, and fills empty buckets with null", async () => {
		const { admin } = await setup([
			[0, 1, "north"],
			[10, 3, "south"],
			[130, 5, "north"],
		]);
		const grouped = await walk(admin.secret, "temps", {
			...RANGE,
			le: BASE + 179,
			step: "1m",
			measurements: "celsius",
			group_by: "site",
			aggregates: "sum",
		});
		expect(grouped.pages[0]!.columns).toEqual(["_timestamp", "site", "celsius.sum"]);
		expect(grouped.rows).toEqual([
			[BASE, "north", 1],
			[BASE, "south", 3],
			[BASE + 120, "north", 5],
		]);
		const filled = await walk(admin.secret, "temps", {
			...RANGE,
			le: BASE + 179,
			step: "1m",
			measurements: "celsius",
			aggregates: "count,sum",
			fill: "null",
		});
		expect(filled.rows).toEqual([
			[BASE, 2, 4],
			[BASE + 60, 0, null],
			[BASE + 120, 1, 5],
		]);
		const previous = await walk(admin.secret, "temps", {
			...RANGE,
			le: BASE + 179,
			step: "1m",
			measurements: "celsius",
			aggregates: "sum",
			fill: "previous",
		});
		expect(previous.rows).toEqual([
			[BASE, 4],
			[BASE + 60, 4],
			[BASE + 120, 5],
		]);
	});

	it("walks every point once in pages, both ways, and refuses another query's cursor", async () => {
		const offsets = Array.from({ length: 12 }, (_, i) => i * 17);
		const { admin } = await setup(offsets.map((offset, i) => [offset, i]));
		const asc = await walk(admin.secret, "temps", { ...RANGE, count: 5, measurements: "celsius" });
		expect(asc.rows.map((row) => row[0])).toEqual(offsets.map((o) => BASE + o));
		expect(asc.pages.length).toBeGreaterThan(2);
		const desc = await walk(admin.secret, "temps", { ...RANGE, count: 5, measurements: "celsius", order: "desc" });
		expect(desc.rows).toEqual([...asc.rows].reverse());
		const first = await query(admin.secret, "temps", { ...RANGE, count: 5 });
		const other = await query(admin.secret, "temps", {
			...RANGE,
			count: 5,
			measurements: "state",
			cursor: first.body.cursor,
		});
		expectError(other, 400, 400104);
		// Reuse repeats its page; a truncate ends every cursor of the table.
		const again = await query(admin.secret, "temps", { ...RANGE, count: 5, cursor: first.body.cursor });
		const twice = await query(admin.secret, "temps", { ...RANGE, count: 5, cursor: first.body.cursor });
		expect(twice.body.rows).toEqual(again.body.rows);
		expect(twice.body.rows.length).toBe(5);
		expect((await call("DELETE", "/account/services/timeseries/temps/data", { secret: admin.secret })).status).toBe(
			200,
		);
		expectError(await query(admin.secret, "temps", { ...RANGE, count: 5, cursor: first.body.cursor }), 400, 400104);
		// Server-Timing shows the chunk objects called and the rows read.
		expect(first.headers.get("server-timing")).toMatch(/tsdb;dur=\d+;desc="objects=1 rows_read=5"/);
	});

	it("refuses a bucket holding more stored rows than count, and invalid parameters", async () => {
		const { admin } = await setup([
			[0, 1],
			[1, 2],
			[2, 3],
		]);
		expectError(await query(admin.secret, "temps", { ...RANGE, step: "30s", count: 2 }), 400, 400221);
		expect((await query(admin.secret, "temps", { ...RANGE, count: 10_000 })).status).toBe(200);
		for (const params of [
			{ ...RANGE, le: BASE - 1 },
			{ ...RANGE, step: "7m" },
			{ ...RANGE, aggregates: "sum" },
			{ ...RANGE, step: "1m", aggregates: "sum,sum" },
			{ ...RANGE, step: "1m", group_by: "site", fill: "null" },
			{ ...RANGE, measurements: "pressure" },
			{ ...RANGE, count: 10_001 },
		])
			expectError(await query(admin.secret, "temps", params), 400, 400101);
	});
});

describe("query_timeseries_table with fill, a page at a time", () => {
	// Values at minutes 0, 1, 5, 6 and 12: runs of empty buckets between them.
	const MINUTES = [0, 1, 5, 6, 12];

	it("answers the same rows in pages of any size as in one, for every fill and both orders", async () => {
		const { admin } = await setup(MINUTES.map((minute, i) => [minute * 60, i * 10]));
		const base = { ...RANGE, le: BASE + 14 * 60, step: "1m", measurements: "celsius", aggregates: "count,avg" };
		for (const [fill, order] of [
			["null", "asc"],
			["previous", "asc"],
			["linear", "asc"],
			["null", "desc"],
		] as const) {
			const whole = await walk(admin.secret, "temps", { ...base, fill, order, count: 1000 });
			expect(whole.pages).toHaveLength(1);
			expect(whole.rows).toHaveLength(15);
			for (const count of [1, 2, 3]) {
				const paged = await walk(admin.secret, "temps", { ...base, fill, order, count });
				expect(paged.rows, `${fill} ${order} count=${count}`).toEqual(whole.rows);
				// Never more rows than count in a page.
				for (const page of paged.pages) expect(page.rows.length).toBeLessThanOrEqual(count);
			}
		}
		const linear = await walk(admin.secret, "temps", { ...base, fill: "linear", count: 1000 });
		// Minute 3 lies on the line from minute 1 (10) to minute 5 (20).
		expect(linear.rows[3]).toEqual([BASE + 180, 0, 15]);
		// previous and linear need order asc.
		expectError(await query(admin.secret, "temps", { ...base, fill: "previous", order: "desc" }), 400, 400101);
	});
});

describe("query_timeseries_table's buckets", () => {
	it("aggregates whole buckets whatever ge and le cut, so raw points and tiers answer alike", async () => {
		const { admin } = await setup([
			[5, 1],
			[40, 2],
			[70, 4],
			[115, 8],
		]);
		// ge and le inside the first and last minute: both minutes count whole.
		const cut = {
			ge: BASE + 30,
			le: BASE + 80,
			consistent: true,
			step: "1m",
			measurements: "celsius",
			aggregates: "count,sum",
		};
		const tier = await walk(admin.secret, "temps", cut);
		expect(tier.pages[0]!.resolution).toBe("1m");
		expect(tier.rows).toEqual([
			[BASE, 2, 3],
			[BASE + 60, 2, 12],
		]);
		// 30 s steps no tier divides: read from the raw points, the same whole buckets.
		const raw = await walk(admin.secret, "temps", { ...cut, step: "30s" });
		expect(raw.pages[0]!.resolution).toBe("raw");
		expect(raw.rows).toEqual([
			[BASE + 30, 1, 2],
			[BASE + 60, 1, 4],
		]);
	});
});

describe("query_timeseries_table's 4 MiB", () => {
	it("stops a page before its answer passes 4 MiB, and the walk goes on from there", async () => {
		const admin = await bootstrap();
		await createTables(admin.secret, {
			blobs: { dimensions: { names: [], types: [] }, measurements: { names: ["blob"], types: ["json"] } },
		});
		const twin = await newTwin(admin.secret);
		const at = Math.floor(Date.now() / 1000);
		// 100 values of 60,000 characters each: about 6 MB of points.
		for (let i = 0; i < 100; i++) {
			const value = `${i}`.padEnd(60_000, "x");
			const entry = i === 0 ? { value, timeseries: { blobs: { measurement: "blob" } } } : { value };
			const res = await call(i === 0 ? "POST" : "PATCH", `/twins/${twin}/ledgers/personal`, {
				secret: admin.secret,
				body: { entries: { b: entry } },
			});
			expect(res.status).toBe(i === 0 ? 201 : 200);
		}
		const range = { ge: at - 60, le: at + 600, consistent: true, count: 1000 };
		const { rows, pages } = await walk(admin.secret, "blobs", range);
		expect(rows.map((row) => Number.parseInt(String(row[2]), 10))).toEqual(Array.from({ length: 100 }, (_, i) => i));
		expect(pages.length).toBeGreaterThan(1);
		for (const page of pages) expect(JSON.stringify(page.rows).length).toBeLessThanOrEqual(4 * 1024 * 1024);
	});
});

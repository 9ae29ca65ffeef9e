import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Json } from "../../src/base/json";
import {
	type ChunkSpec,
	type MeasurementType,
	type Point,
	type RawPosition,
	ROLLUP_STEPS,
	type RollupPosition,
	type RollupRow,
	type RollupStep,
	type Tier,
} from "../../src/timeseries/types";
import { chunkClient, chunkName } from "../../src/timeseries/chunk-client";
import { rollupsOf } from "../unit/timeseries/rollups-of";

// A Timeseries chunk object (src/timeseries/chunk-object.ts) through its stub: points stored
// once by key, every rollup tier equal to what the raw points aggregate to whatever order they
// came in, pages that meet every row once, the byte limit, tiers added and removed, retention.

const DAY = 86_400;
const MEASUREMENTS: Record<string, MeasurementType> = {
	temp: "float",
	n: "integer",
	label: "string",
	on: "boolean",
	at: "timestamp",
	blob: "json",
};

// The client, and the stub itself for what reaches past the methods (storage, the alarm).
function chunk() {
	const name = chunkName(crypto.randomUUID(), 1, 0);
	return Object.assign(chunkClient(env, name), { raw: env.TIMESERIES.getByName(name) });
}

function specOf(overrides: Partial<ChunkSpec> = {}): ChunkSpec {
	const start = Math.floor(Date.now() / 1000 / DAY) * DAY;
	return {
		account: "acct",
		table: crypto.randomUUID(),
		generation: 1,
		start,
		end: start + DAY,
		measurements: MEASUREMENTS,
		retention: null,
		tiers: [
			{ step: "1m", retention: null },
			{ step: "1h", retention: null },
			{ step: "1d", retention: null },
		],
		maxBytes: 1e9,
		...overrides,
	};
}

// The table's definition in D1 as the spec says it: the object's alarm reads it again (an
// account id that is no version-8 id is on DB_0).
async function define(spec: ChunkSpec) {
	const text = (seconds: number | null) => (seconds === null ? "INF" : `${seconds / DAY}D`);
	await env.DB_0.prepare(
		`INSERT INTO timeseries_tables (uuid, account, name, dimensions, measurements, defaults, retention, chunk, rollups,
			building, generation, status, rows, table_size, created_ts, updated_ts)
		VALUES (?, ?, ?, '{"names":[],"types":[]}', ?, NULL, ?, ?, ?, '[]', ?, 'ready', 0, 0, 0, 0)
		ON CONFLICT (uuid) DO UPDATE SET retention = excluded.retention, rollups = excluded.rollups`,
	)
		.bind(
			spec.table,
			spec.account,
			`t${spec.table.replaceAll("-", "")}`,
			JSON.stringify({ names: Object.keys(spec.measurements), types: Object.values(spec.measurements) }),
			text(spec.retention),
			text(spec.end - spec.start),
			JSON.stringify(spec.tiers.map((tier) => ({ step: tier.step, retention: text(tier.retention) }))),
			spec.generation,
		)
		.run();
}

// A repeatable pseudo-random sequence, so a failure can be run again.
function random(seed: number) {
	let state = seed >>> 0;
	return () => {
		state = (state * 1_664_525 + 1_013_904_223) >>> 0;
		return state / 2 ** 32;
	};
}

// Points over a few hours of the chunk, with ties of ts (broken by seq, then entry), null values
// and every measurement type.
function pointsOf(spec: ChunkSpec, count: number, seed = 1): Point[] {
	const next = random(seed);
	const pick = <T>(list: T[]) => list[Math.floor(next() * list.length)]!;
	const names = Object.keys(MEASUREMENTS);
	const points: Point[] = [];
	for (let i = 0; i < count; i++) {
		const measurement = pick(names);
		const ts = spec.start + Math.round(next() * 3 * 3600 * 4) / 4;
		const valueFor = (): Json => {
			if (next() < 0.15) return null;
			switch (MEASUREMENTS[measurement]) {
				case "float":
					// Never -0: JSON has no negative zero.
					return Math.round(next() * 400 - 200) / 4 + 0;
				case "integer":
				case "timestamp":
					return Math.floor(next() * 1000);
				case "string":
					return pick(["a", "b", "c"]);
				case "boolean":
					return next() < 0.5;
				default:
					return { k: pick([1, 2, 3]) };
			}
		};
		points.push({
			seq: 1 + Math.floor(i / 3),
			entry: `e${i % 3}`,
			ts: i % 5 === 0 && i > 0 ? points[i - 1]!.ts : ts,
			twin: pick(["t1", "t2"]),
			dims: pick([["x"], ["y", 1], []]),
			measurement,
			value: valueFor(),
		});
	}
	return points;
}

const keyOrder = (a: RawPosition, b: RawPosition) =>
	a.ts - b.ts || a.seq - b.seq || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0);
const textOrder = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const rollupOrder = (a: RollupRow, b: RollupRow) =>
	a.bucket - b.bucket ||
	textOrder(a.twin, b.twin) ||
	textOrder(JSON.stringify(a.dims), JSON.stringify(b.dims)) ||
	textOrder(a.measurement, b.measurement);

// What a tier should hold: the rollups computed from the raw points the plain way.
function expectedRollups(points: Point[], step: RollupStep): RollupRow[] {
	return rollupsOf(points, ROLLUP_STEPS[step], MEASUREMENTS).sort(rollupOrder);
}

type Stub = ReturnType<typeof chunk>;

// Every row of a tier, a page of `limit` at a time.
async function readAll(stub: Stub, tier: Tier, options: { desc?: boolean; limit?: number; ge?: number; le?: number }) {
	const { desc = false, limit = 1000, ge = 0, le = 1e12 } = options;
	const rows: (Point | RollupRow)[] = [];
	let after: RawPosition | RollupPosition | null = null;
	for (;;) {
		const page = await stub.read({ tier, ge, le, after, desc, limit });
		const got: (Point | RollupRow)[] = (tier === "raw" ? page.raw : page.rollup) ?? [];
		expect(got.length).toBeLessThanOrEqual(limit);
		rows.push(...got);
		if (got.length < limit) return rows;
		const last = got.at(-1)!;
		after =
			tier === "raw"
				? { ts: (last as Point).ts, seq: (last as Point).seq, entry: (last as Point).entry }
				: {
						bucket: (last as RollupRow).bucket,
						twin: last.twin,
						dims: JSON.stringify(last.dims),
						measurement: last.measurement,
					};
	}
}

async function expectTiers(stub: Stub, spec: ChunkSpec, points: Point[]) {
	const raw = (await readAll(stub, "raw", {})) as Point[];
	expect(raw).toEqual([...points].sort(keyOrder));
	for (const { step } of spec.tiers) expect(await readAll(stub, step, {})).toEqual(expectedRollups(points, step));
}

// Batches of `size`, in the order given.
const batches = <T>(list: T[], size: number) =>
	Array.from({ length: Math.ceil(list.length / size) }, (_, i) => list.slice(i * size, (i + 1) * size));

function shuffled<T>(list: T[], seed: number): T[] {
	const next = random(seed);
	const copy = [...list];
	for (let i = copy.length - 1; i > 0; i--) {
		const j = Math.floor(next() * (i + 1));
		[copy[i], copy[j]] = [copy[j]!, copy[i]!];
	}
	return copy;
}

describe("timeseries chunk object", () => {
	it("stores a point once by its key, and counts it once in every tier", async () => {
		const stub = chunk();
		const spec = specOf();
		const points = pointsOf(spec, 60);
		const first = await stub.insert(spec, points);
		expect(first).toMatchObject({ stored: 60, duplicates: 0, full: [] });
		expect(first.bytes).toBeGreaterThan(0);
		// A redelivery, and a batch that repeats a key within itself.
		expect(await stub.insert(spec, points)).toMatchObject({ stored: 0, bytes: 0, duplicates: 60 });
		const more = pointsOf(spec, 3, 7).map((p, i) => ({ ...p, seq: 10_000 + i }));
		const third = await stub.insert(spec, [...more, more[0]!]);
		expect(third).toMatchObject({ stored: 3, duplicates: 1 });
		await expectTiers(stub, spec, [...points, ...more]);
		expect(await stub.status()).toEqual({
			tiers: { raw: "ready", "1m": "ready", "1h": "ready", "1d": "ready" },
			rows: 63,
			bytes: first.bytes + third.bytes,
		});
	});

	it("folds late and out-of-order points into every tier at once", async () => {
		const stub = chunk();
		const spec = specOf();
		const points = pointsOf(spec, 200, 3);
		// The newest first, then the rest shuffled: most points arrive after later ones.
		const order = [...points].sort((a, b) => keyOrder(b, a));
		for (const batch of batches([...order.slice(0, 50), ...shuffled(order.slice(50), 4)], 17))
			expect((await stub.insert(spec, batch)).stored).toBe(batch.length);
		await expectTiers(stub, spec, points);
	});

	it("pages over raw and rollup rows, each row once, in both directions", async () => {
		const stub = chunk();
		const spec = specOf();
		const points = pointsOf(spec, 150, 5);
		await stub.insert(spec, points);
		const ge = spec.start + 1800.5;
		const le = spec.start + 7200;
		const raw = [...points].sort(keyOrder).filter((p) => p.ts >= ge && p.ts <= le);
		expect(await readAll(stub, "raw", { ge, le, limit: 7 })).toEqual(raw);
		expect(await readAll(stub, "raw", { ge, le, limit: 7, desc: true })).toEqual([...raw].reverse());
		for (const step of ["1m", "1h"] as const) {
			const size = ROLLUP_STEPS[step];
			// A bucket is in when its start is within [the bucket of ge, le].
			const rows = expectedRollups(points, step).filter(
				(r) => r.bucket >= Math.floor(ge / size) * size && r.bucket <= le,
			);
			expect(rows.length).toBeGreaterThan(5);
			expect(await readAll(stub, step, { ge, le, limit: 5 })).toEqual(rows);
			expect(await readAll(stub, step, { ge, le, limit: 5, desc: true })).toEqual([...rows].reverse());
		}
	});

	it("refuses new points once it holds maxBytes, answering them as full", async () => {
		const stub = chunk();
		const points = pointsOf(specOf(), 40, 9);
		const { bytes } = await chunk().insert(specOf(), points.slice(0, 10));
		const spec = specOf({ maxBytes: bytes });
		const answer = await stub.insert(spec, points.slice(0, 12));
		expect(answer.stored).toBe(10);
		expect(answer.bytes).toBe(bytes);
		expect(answer.full).toEqual(points.slice(10, 12).map((p) => ({ seq: p.seq, entry: p.entry })));
		// A stored point delivered again is a duplicate, not refused.
		const again = await stub.insert(spec, points.slice(8, 14));
		expect(again).toMatchObject({ stored: 0, duplicates: 2 });
		expect(again.full).toHaveLength(4);
		expect(await stub.status()).toMatchObject({ rows: 10, bytes });
		await expectTiers(stub, spec, points.slice(0, 10));
	});

	it("builds an added tier from the raw points while inserts go on", async () => {
		const stub = chunk();
		const before = specOf({ tiers: [{ step: "1m", retention: null }] });
		const points = pointsOf(before, 300, 11);
		const [early, late] = [points.slice(0, 150), shuffled(points.slice(150), 12)];
		await stub.insert(before, early);
		const spec: ChunkSpec = {
			...before,
			tiers: [...before.tiers, { step: "15m", retention: null }, { step: "1d", retention: null }],
		};
		expect((await stub.tiers(spec)).tiers).toEqual({
			raw: "ready",
			"1m": "ready",
			"15m": "building",
			"1d": "building",
		});
		// A building tier answers no rows: the caller reads another.
		expect(await stub.read({ tier: "15m", ge: 0, le: 1e12, after: null, desc: false, limit: 10 })).toEqual({
			rollup: [],
		});
		const pending = batches(late, 10);
		const done: Record<string, boolean> = { "15m": false, "1d": false };
		while (!done["15m"] || !done["1d"] || pending.length) {
			const batch = pending.shift();
			const [fifteen, day] = await Promise.all([
				stub.fillStep(spec, "15m", 13),
				stub.fillStep(spec, "1d", 29),
				batch ? stub.insert(spec, batch) : undefined,
			]);
			done["15m"] = fifteen.done;
			done["1d"] = day.done;
		}
		expect((await stub.status()).tiers).toEqual({ raw: "ready", "1m": "ready", "15m": "ready", "1d": "ready" });
		await expectTiers(stub, spec, points);
	});

	it("drops a removed tier at once, and builds it anew when it comes back", async () => {
		const stub = chunk();
		const spec = specOf();
		const points = pointsOf(spec, 80, 13);
		await stub.insert(spec, points);
		const without = { ...spec, tiers: spec.tiers.filter((t) => t.step !== "1h") };
		await stub.insert(without, []);
		expect((await stub.status()).tiers).toEqual({ raw: "ready", "1m": "ready", "1d": "ready" });
		expect(await stub.read({ tier: "1h", ge: 0, le: 1e12, after: null, desc: false, limit: 10 })).toEqual({
			rollup: [],
		});
		const tables = await runInDurableObject(stub.raw, (_, state) =>
			state.storage.sql
				.exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table'")
				.toArray()
				.map((r) => r.name),
		);
		expect(tables).not.toContain("r_1h");
		expect((await stub.tiers(spec)).tiers["1h"]).toBe("building");
		while (!(await stub.fillStep(spec, "1h", 25)).done);
		await expectTiers(stub, spec, points);
	});

	it("drops each tier when its retention runs out, then empties itself", async () => {
		const stub = chunk();
		// A chunk that ended ten days ago.
		const start = (Math.floor(Date.now() / 1000 / DAY) - 10) * DAY;
		const spec = specOf({ start, end: start + DAY, retention: 30 * DAY });
		const points = pointsOf(spec, 40, 17);
		await define(spec);
		await stub.insert(spec, points);
		const alarmOf = () => runInDurableObject(stub.raw, (_, state) => state.storage.getAlarm());
		// Its retention is weeks away: the alarm comes within a day, to read the definition again.
		const withinADay = async () => {
			const alarm = await alarmOf();
			expect(alarm).toBeGreaterThan(Date.now());
			expect(alarm).toBeLessThanOrEqual(Date.now() + DAY * 1000);
		};
		await withinADay();

		// The minute tier's retention shortened to a day: it is past.
		const shorter: ChunkSpec = {
			...spec,
			tiers: [
				{ step: "1m", retention: DAY },
				{ step: "1h", retention: 20 * DAY },
				{ step: "1d", retention: null },
			],
		};
		await define(shorter);
		await runDurableObjectAlarm(stub.raw);
		expect((await stub.status()).tiers).toEqual({ raw: "ready", "1h": "ready", "1d": "ready" });
		await withinADay();
		await expectTiers(stub, { ...spec, tiers: shorter.tiers.slice(1) }, points);

		// Raw and then every tier past: the object is emptied, alarm included.
		const past: ChunkSpec = {
			...spec,
			retention: DAY,
			tiers: [
				{ step: "1h", retention: 2 * DAY },
				{ step: "1d", retention: 3 * DAY },
			],
		};
		await define(past);
		await runDurableObjectAlarm(stub.raw);
		expect(await stub.status()).toEqual({ tiers: {}, rows: 0, bytes: 0 });
		expect(await alarmOf()).toBeNull();
		const tables = await runInDurableObject(stub.raw, (_, state) =>
			state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '_cf_%'").toArray(),
		);
		expect(tables).toEqual([]);
		// A late point for it is refused, and writes nothing back.
		expect(await stub.insert(past, points.slice(0, 2))).toMatchObject({ stored: 0, expired: 2 });
		expect(await stub.status()).toEqual({ tiers: {}, rows: 0, bytes: 0 });
	});

	it("wipes everything, and takes points again after", async () => {
		const stub = chunk();
		const spec = specOf({ retention: 100 * DAY });
		const points = pointsOf(spec, 30, 19);
		await stub.insert(spec, points);
		await stub.wipe();
		expect(await stub.status()).toEqual({ tiers: {}, rows: 0, bytes: 0 });
		expect(await runInDurableObject(stub.raw, (_, state) => state.storage.getAlarm())).toBeNull();
		expect(await readAll(stub, "raw", {})).toEqual([]);
		expect(await stub.insert(spec, points.slice(0, 5))).toMatchObject({ stored: 5 });
		await expectTiers(stub, spec, points.slice(0, 5));
	});
});

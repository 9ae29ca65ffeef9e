import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/base/json";
import {
	AGGREGATES,
	type AggregateQuery,
	aggregateRaw,
	aggregateRollups,
	type GroupKey,
	stepColumns,
} from "../../../src/timeseries/aggregate";
import { compareSql, compareText } from "../../../src/timeseries/sql-order";
import type { MeasurementType, Point } from "../../../src/timeseries/types";
import { rollupsOf } from "./rollups-of";

const T1 = "11111111-1111-4111-8111-111111111111";
const T2 = "22222222-2222-4222-8222-222222222222";

const TYPES: Record<string, MeasurementType> = {
	f: "float",
	i: "integer",
	s: "string",
	b: "boolean",
	t: "timestamp",
	j: "json",
};

function measurements(...names: string[]) {
	return names.map((name) => ({ name, type: TYPES[name] }));
}

function query(patch: Partial<AggregateQuery> = {}): AggregateQuery {
	return { step: 60, measurements: measurements("f"), aggregates: [...AGGREGATES], groupBy: [], ...patch };
}

let seq = 0;
function point(ts: number, measurement: string, value: Json, patch: Partial<Point> = {}): Point {
	return { seq: ++seq, entry: measurement, ts, twin: T1, dims: [null], measurement, value, ...patch };
}

// Both paths, and the same answer from each.
function both(points: Point[], q: AggregateQuery) {
	const raw = aggregateRaw(points, q);
	expect(aggregateRollups(rollupsOf(points, 60, TYPES), q)).toEqual(raw);
	return raw;
}

describe("stepColumns", () => {
	it("names _timestamp, the groups, then each measurement's aggregates in request order", () => {
		expect(stepColumns(["twin", "site"], ["temp", "rpm"], ["max", "count"])).toEqual([
			"_timestamp",
			"twin",
			"site",
			"temp.max",
			"temp.count",
			"rpm.max",
			"rpm.count",
		]);
	});
});

describe("compareSql", () => {
	it("orders null, numbers and booleans as 0/1, text by code point, then the rest", () => {
		const sorted: Json[] = [null, -1, false, 0.5, true, 2, "", "B", "a", "\uffff", "😀", [1], { a: 1 }];
		const shuffled = [...sorted].reverse();
		expect(shuffled.sort(compareSql)).toEqual(sorted);
		expect(compareSql(true, 1)).toBe(0);
		expect(compareText("\uffff", "😀")).toBeLessThan(0);
		expect(compareText("ab", "abc")).toBeLessThan(0);
	});
});

describe("aggregateRaw and aggregateRollups", () => {
	it("computes each aggregate over the non-null values of a float measurement", () => {
		const points = [point(0, "f", 2), point(10, "f", null), point(20, "f", 5.5), point(30, "f", -1.5)];
		expect(both(points, query())).toEqual([{ start: 0, group: [], cells: [3, 6, 2, -1.5, 5.5, 2, -1.5] }]);
	});

	it("answers null where an aggregate does not apply to the type", () => {
		const points = [
			point(1, "s", "b"),
			point(2, "s", "a"),
			point(1, "b", true),
			point(2, "b", false),
			point(1, "t", 1000.5),
			point(2, "t", 999),
			point(1, "j", { x: 1 }),
			point(2, "j", 7),
		];
		const [row] = both(points, query({ measurements: measurements("s", "b", "t", "j") }));
		expect(row.cells).toEqual([
			...[2, null, null, null, null, "b", "a"],
			...[2, null, null, null, null, true, false],
			...[2, null, null, 999, 1000.5, 1000.5, 999],
			...[2, null, null, null, null, { x: 1 }, 7],
		]);
	});

	it("gives a row with count 0 for points whose values are all null, and none without points", () => {
		const points = [point(0, "i", null), point(70, "f", 1)];
		expect(
			both(points, query({ measurements: measurements("i"), aggregates: ["count", "sum", "avg", "first"] })),
		).toEqual([{ start: 0, group: [], cells: [0, null, null, null] }]);
	});

	it("counts only the requested measurements", () => {
		const points = [point(0, "f", 1), point(5, "i", 4), point(65, "i", 3)];
		const q = query({ measurements: measurements("i"), aggregates: ["sum"] });
		expect(both(points, q)).toEqual([
			{ start: 0, group: [], cells: [4] },
			{ start: 60, group: [], cells: [3] },
		]);
	});

	it("buckets [k·step, (k+1)·step) and orders rows by start, then group values in SQLite order", () => {
		const dims: Json[] = ["x", 2, null, true, 1.5];
		const points = dims.flatMap((dim, k) => [
			point(119.999 - k, "f", k, { dims: [dim] }),
			point(120 + k, "f", 10 + k, { dims: [dim] }),
		]);
		const rows = both(points, query({ step: 120, aggregates: ["sum"], groupBy: [{ kind: "dim", index: 0 }] }));
		expect(rows.map((r) => [r.start, ...r.group, ...r.cells])).toEqual([
			[0, null, 2],
			[0, true, 3],
			[0, 1.5, 4],
			[0, 2, 1],
			[0, "x", 0],
			[120, null, 12],
			[120, true, 13],
			[120, 1.5, 14],
			[120, 2, 11],
			[120, "x", 10],
		]);
	});

	it("groups by twin and dimensions in the order asked", () => {
		const points = [
			point(0, "i", 1, { twin: T2, dims: ["a"] }),
			point(0, "i", 2, { twin: T1, dims: ["b"] }),
			point(0, "i", 4, { twin: T1, dims: ["a"] }),
			point(0, "i", 8, { twin: T1, dims: ["a"] }),
		];
		const q = query({ measurements: measurements("i"), aggregates: ["sum"] });
		const groups = (groupBy: GroupKey[]) => both(points, { ...q, groupBy }).map((r) => [...r.group, ...r.cells]);
		expect(groups([{ kind: "twin" }])).toEqual([
			[T1, 14],
			[T2, 1],
		]);
		expect(groups([{ kind: "dim", index: 0 }, { kind: "twin" }])).toEqual([
			["a", T1, 12],
			["a", T2, 1],
			["b", T1, 2],
		]);
	});

	it("takes first and last by _timestamp, ties by seq, then series, then entry", () => {
		const points = [
			point(5, "i", 1, { seq: 7, entry: "b" }),
			point(5, "i", 2, { seq: 7, entry: "a" }),
			point(5, "i", 3, { seq: 6, entry: "z" }),
			point(9, "i", 4, { seq: 1, entry: "a" }),
			point(9, "i", 5, { seq: 1, entry: "b" }),
			point(9, "i", 6, { seq: 1, entry: "a", dims: [2] }),
			point(9, "i", 7, { seq: 1, entry: "0", dims: [1] }),
			point(2, "i", null, { seq: 9 }),
		];
		const q = query({ measurements: measurements("i"), aggregates: ["first", "last"] });
		expect(both(points, q)[0].cells).toEqual([3, 6]);
		expect(both(points.slice(0, 5), q)[0].cells).toEqual([3, 5]);
	});

	it("answers alike from raw points and rollup rows, for any step a tier divides and any grouping", () => {
		let state = 12345;
		const random = () => {
			state = (state * 1103515245 + 12345) % 2 ** 31;
			return state / 2 ** 31;
		};
		const pick = <T>(list: T[]) => list[Math.floor(random() * list.length)];
		const values: Record<string, () => Json> = {
			f: () => Math.round(random() * 80 - 40) / 4,
			i: () => Math.floor(random() * 100),
			s: () => pick(["a", "b", "c"]),
			b: () => random() < 0.5,
			t: () => Math.round(random() * 1e6) / 1000,
			j: () => pick([{ a: 1 }, [1], "x", 3]),
		};
		const points: Point[] = [];
		for (let write = 1; write <= 300; write++) {
			const ts = Math.round(random() * 7200 * 4) / 4;
			const twin = pick([T1, T2]);
			for (const entry of ["e1", "e2", "e3"]) {
				const measurement = pick(Object.keys(TYPES));
				const value = random() < 0.15 ? null : values[measurement]();
				// A dimension holds values of its one type (true and 1 would be one value in SQLite).
				const dims = [pick([null, "x", "y"]), pick([1, 2, null])];
				points.push({
					seq: write,
					entry,
					ts: pick([ts, ts, Math.floor(ts / 60) * 60]),
					twin,
					dims,
					measurement,
					value,
				});
			}
		}
		const groupings: GroupKey[][] = [
			[],
			[{ kind: "twin" }],
			[{ kind: "dim", index: 1 }],
			[{ kind: "dim", index: 0 }, { kind: "twin" }],
		];
		for (const step of [60, 300, 3600, 86_400])
			for (const groupBy of groupings) {
				const q = query({ step, groupBy, measurements: measurements("f", "i", "s", "b", "t", "j") });
				const raw = aggregateRaw(points, q);
				expect(raw.length).toBeGreaterThan(0);
				expect(aggregateRollups(rollupsOf(points, 60, TYPES), q)).toEqual(raw);
				if (step % 300 === 0) expect(aggregateRollups(rollupsOf(points, 300, TYPES), q)).toEqual(raw);
			}
	});
});

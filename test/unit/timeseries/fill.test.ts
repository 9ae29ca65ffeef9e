import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/base/json";
import type { AggregateQuery, Bucket } from "../../../src/timeseries/aggregate";
import { type Fill, type FillState, fillRows, numberColumns } from "../../../src/timeseries/fill";

const Q: AggregateQuery = {
	step: 10,
	measurements: [
		{ name: "v", type: "integer" },
		{ name: "s", type: "string" },
	],
	aggregates: ["count", "avg", "last"],
	groupBy: [],
};

const row = (start: number, cells: Json[]): Bucket => ({ start, group: [], cells });

// v: values at 10 and 40 and 70; s: a string at 20.
const ROWS = [
	row(10, [1, 2, 2, 0, null, null]),
	row(20, [0, null, null, 1, null, "a"]),
	row(40, [1, 8, 8, 0, null, null]),
	row(70, [2, 5, 2, 0, null, null]),
];

function fill(mode: Fill, rows = ROWS, from = 0, to = 90, carry?: FillState) {
	return fillRows(
		rows.filter((r) => r.start >= from && r.start <= to),
		{ ...Q, fill: mode, from, to, carry },
	);
}

const cells = (rows: Bucket[]) => rows.map((r) => [r.start, ...r.cells]);

describe("numberColumns", () => {
	it("takes sum and avg of any type, min to last of integer, float and timestamp", () => {
		expect(numberColumns(Q)).toEqual([false, true, true, false, true, false]);
		expect(numberColumns({ ...Q, aggregates: ["sum", "min", "first"] })).toEqual([
			true,
			true,
			true,
			true,
			false,
			false,
		]);
	});
});

describe("fillRows", () => {
	it("null adds a row per bucket without points: count 0, the rest null", () => {
		const { rows, pending } = fill("null");
		expect(pending).toBe(0);
		expect(cells(rows)).toEqual([
			[0, 0, null, null, 0, null, null],
			[10, 1, 2, 2, 0, null, null],
			[20, 0, null, null, 1, null, "a"],
			[30, 0, null, null, 0, null, null],
			[40, 1, 8, 8, 0, null, null],
			[50, 0, null, null, 0, null, null],
			[60, 0, null, null, 0, null, null],
			[70, 2, 5, 2, 0, null, null],
			[80, 0, null, null, 0, null, null],
			[90, 0, null, null, 0, null, null],
		]);
	});

	it("previous fills the number columns with the nearest earlier value", () => {
		const { rows, pending } = fill("previous");
		expect(pending).toBe(0);
		expect(cells(rows)).toEqual([
			[0, 0, null, null, 0, null, null],
			[10, 1, 2, 2, 0, null, null],
			[20, 0, 2, 2, 1, null, "a"],
			[30, 0, 2, 2, 0, null, null],
			[40, 1, 8, 8, 0, null, null],
			[50, 0, 8, 8, 0, null, null],
			[60, 0, 8, 8, 0, null, null],
			[70, 2, 5, 2, 0, null, null],
			[80, 0, 5, 2, 0, null, null],
			[90, 0, 5, 2, 0, null, null],
		]);
	});

	it("linear fills on the line between the nearest earlier and later values, null where one is missing", () => {
		const { rows, pending } = fill("linear");
		expect(cells(rows)).toEqual([
			[0, 0, null, null, 0, null, null],
			[10, 1, 2, 2, 0, null, null],
			[20, 0, 4, 4, 1, null, "a"],
			[30, 0, 6, 6, 0, null, null],
			[40, 1, 8, 8, 0, null, null],
			[50, 0, 7, 6, 0, null, null],
			[60, 0, 6, 4, 0, null, null],
			[70, 2, 5, 2, 0, null, null],
			[80, 0, null, null, 0, null, null],
			[90, 0, null, null, 0, null, null],
		]);
		// 80 and 90 are right only if nothing follows 90.
		expect(pending).toBe(2);
	});

	it("fills nulls of rows with points too, and leaves other columns alone", () => {
		const rows = [
			row(0, [1, 4, 4, 0, null, null]),
			row(10, [1, null, null, 1, null, "x"]),
			row(20, [1, 0, 0, 0, null, null]),
		];
		expect(cells(fill("linear", rows, 0, 20).rows)).toEqual([
			[0, 1, 4, 4, 0, null, null],
			[10, 1, 2, 2, 1, null, "x"],
			[20, 1, 0, 0, 0, null, null],
		]);
	});

	it("uses rows read ahead to end the lines, without answering them", () => {
		const { rows, pending, carry } = fillRows(
			ROWS.filter((r) => r.start <= 50),
			{ ...Q, fill: "linear", from: 0, to: 50, ahead: ROWS.filter((r) => r.start > 50) },
		);
		expect(pending).toBe(0);
		expect(cells(rows).at(-1)).toEqual([50, 0, 7, 6, 0, null, null]);
		expect(carry.last[1]).toEqual({ start: 40, value: 8 });
	});

	it("says which trailing rows wait for a later value, with a carry after them and one before", () => {
		const rows = [...ROWS.slice(0, 3), row(50, [0, null, null, 1, null, null])];
		const result = fill("linear", rows, 0, 50);
		expect(result.pending).toBe(1);
		expect(cells(result.rows).at(-1)).toEqual([50, 0, null, null, 1, null, null]);
		const at40 = { start: 40, value: 8 };
		expect(result.resume).toEqual({ last: [{ start: 40, value: 1 }, at40, at40, { start: 40, value: 0 }, null, null] });
		expect(result.carry).toEqual({ last: [{ start: 50, value: 0 }, at40, at40, { start: 50, value: 1 }, null, null] });
		const previous = fill("previous", rows, 0, 50);
		expect(previous.pending).toBe(0);
		expect(previous.resume).toEqual(previous.carry);
	});

	it("refuses to fill more than one series", () => {
		expect(() => fillRows([], { ...Q, groupBy: [{ kind: "twin" }], fill: "null", from: 0, to: 0 })).toThrow();
	});
});

// A caller paging through [from, to] a few buckets at a time. Without reading ahead it answers
// the rows that are final, holds back the pending ones (calling again from the first of them
// with `resume`), and answers all on the last slice. Reading ahead, it passes every row past the
// slice, so that pending rows have nothing later and are answered, and it goes on with `carry`.
function paged(q: AggregateQuery, mode: Fill, rows: Bucket[], to: number, size: number, readAhead = false): Bucket[] {
	const out: Bucket[] = [];
	let carry: FillState | undefined;
	let start = 0;
	let end = -q.step;
	while (start <= to) {
		end = Math.min(end + size * q.step, to);
		const slice = rows.filter((r) => r.start >= start && r.start <= end);
		const ahead = readAhead ? rows.filter((r) => r.start > end) : undefined;
		const result = fillRows(slice, { ...q, fill: mode, from: start, to: end, carry, ahead });
		const keep = end === to || readAhead ? result.rows.length : result.rows.length - result.pending;
		out.push(...result.rows.slice(0, keep));
		carry = keep === result.rows.length ? result.carry : result.resume;
		start = keep < result.rows.length ? result.rows[keep].start : end + q.step;
	}
	return out;
}

describe("fillRows paged", () => {
	// Two number measurements whose values come and go apart, so that one waits for a later
	// value while the other goes on.
	const q: AggregateQuery = {
		...Q,
		measurements: [
			{ name: "v", type: "integer" },
			{ name: "w", type: "timestamp" },
		],
		aggregates: ["count", "sum", "avg", "min", "last"],
	};
	const series: Bucket[] = [];
	let state = 7;
	const random = () => {
		state = (state * 1103515245 + 12345) % 2 ** 31;
		return state / 2 ** 31;
	};
	const cellsOf = (offset: number, often: number) => {
		const v = random() < often ? Math.floor(random() * 100) : null;
		return v === null ? [0, null, null, null, null] : [1, v, v, v - offset, v];
	};
	for (let start = 100; start <= 1500; start += 10) {
		if (random() < 0.5) continue;
		series.push(row(start, [...cellsOf(1, start < 1200 ? 0.6 : 0.1), ...cellsOf(2, 0.3)]));
	}

	it.each(["null", "previous", "linear"] as const)("gives the same %s rows paged as in one call", (mode) => {
		const whole = fillRows(series, { ...q, fill: mode, from: 0, to: 1700 }).rows;
		expect(whole).toHaveLength(171);
		for (const size of [1, 2, 3, 7, 50, 200]) {
			expect(paged(q, mode, series, 1700, size)).toEqual(whole);
			expect(paged(q, mode, series, 1700, size, true)).toEqual(whole);
		}
	});
});

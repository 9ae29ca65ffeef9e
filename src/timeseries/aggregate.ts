import type { Json } from "../base/json";
import { compareSqlLists, compareText } from "./sql-order";
import type { MeasurementType, Point, RollupRow } from "./types";

// A query with `step` (docs/timeseries.md "Queries"): the rows of whole buckets, raw
// points or rollup rows, become a row per (bucket, group) with a cell per measurement and
// aggregate. Both kinds of input give the same answer for the same points, so a query may
// read whichever tier serves its step: a rollup row holds what its points would add up to.
//
// `first` and `last` are the values at the earliest and latest `_timestamp`, ties in commit
// order: by seq, then (twin, dims), then entry. A rollup row keeps only the seq of its first and
// last point, so two points of one write in different series (twin, dims) at the same instant
// are told apart by their series, in SQLite order, on both paths; within one series the row
// already chose by entry, as the raw path does.

export const AGGREGATES = ["count", "sum", "avg", "min", "max", "first", "last"] as const;
export type Aggregate = (typeof AGGREGATES)[number];

export type GroupKey = { kind: "twin" } | { kind: "dim"; index: number };

export type AggregateQuery = {
	// Seconds; buckets are [k·step, (k+1)·step).
	step: number;
	measurements: { name: string; type: MeasurementType }[];
	aggregates: Aggregate[];
	groupBy: GroupKey[];
};

// One answer row: its bucket's start, its group's values in `groupBy` order, and its cells in
// column order (per measurement, per aggregate).
export type Bucket = { start: number; group: Json[]; cells: Json[] };

// `_timestamp`, the group's names, then `<measurement>.<aggregate>` per measurement, per aggregate.
export function stepColumns(groupByNames: string[], measurements: string[], aggregates: Aggregate[]): string[] {
	return ["_timestamp", ...groupByNames, ...measurements.flatMap((m) => aggregates.map((a) => `${m}.${a}`))];
}

const SUMMABLE = new Set<MeasurementType>(["integer", "float"]);
const ORDERED = new Set<MeasurementType>(["integer", "float", "timestamp"]);

// Where a value stands in commit order among values at the same `_timestamp`.
type Mark = { ts: number; seq: number; twin: string; dims: Json[]; entry: string };

function compareMarks(a: Mark, b: Mark): number {
	return (
		Math.sign(a.ts - b.ts) ||
		Math.sign(a.seq - b.seq) ||
		compareText(a.twin, b.twin) ||
		compareSqlLists(a.dims, b.dims) ||
		compareText(a.entry, b.entry)
	);
}

type Summary = {
	count: number;
	sum: number;
	min: number | null;
	max: number | null;
	first: { value: Json; mark: Mark } | null;
	last: { value: Json; mark: Mark } | null;
};

// What one stored row adds to its measurement's summary: a raw point is a row of one value.
type Part = {
	count: number;
	sum: number | null;
	min: Json;
	max: Json;
	first: Json;
	firstMark: Mark | null;
	last: Json;
	lastMark: Mark | null;
};

type Row = { start: number; group: Json[]; summaries: (Summary | null)[] };

function emptySummary(): Summary {
	return { count: 0, sum: 0, min: null, max: null, first: null, last: null };
}

function add(summary: Summary, part: Part) {
	summary.count += part.count;
	if (typeof part.sum === "number") summary.sum += part.sum;
	if (typeof part.min === "number" && (summary.min === null || part.min < summary.min)) summary.min = part.min;
	if (typeof part.max === "number" && (summary.max === null || part.max > summary.max)) summary.max = part.max;
	if (part.firstMark && (!summary.first || compareMarks(part.firstMark, summary.first.mark) < 0))
		summary.first = { value: part.first, mark: part.firstMark };
	if (part.lastMark && (!summary.last || compareMarks(part.lastMark, summary.last.mark) > 0))
		summary.last = { value: part.last, mark: part.lastMark };
}

type Stored = { ts: number; twin: string; dims: Json[]; measurement: string; part: Part };

function aggregate(stored: Iterable<Stored>, q: AggregateQuery): Bucket[] {
	const index = new Map(q.measurements.map((m, i) => [m.name, i]));
	const rows = new Map<string, Row>();
	for (const { ts, twin, dims, measurement, part } of stored) {
		const m = index.get(measurement);
		if (m === undefined) continue;
		const start = Math.floor(ts / q.step) * q.step;
		const group = q.groupBy.map((key) => (key.kind === "twin" ? twin : (dims[key.index] ?? null)));
		const key = JSON.stringify([start, group]);
		let row = rows.get(key);
		if (!row) {
			row = { start, group, summaries: q.measurements.map(() => null) };
			rows.set(key, row);
		}
		row.summaries[m] ??= emptySummary();
		add(row.summaries[m], part);
	}
	return [...rows.values()]
		.sort((a, b) => a.start - b.start || compareSqlLists(a.group, b.group))
		.map(({ start, group, summaries }) => ({ start, group, cells: cellsOf(summaries, q) }));
}

function cellsOf(summaries: (Summary | null)[], q: AggregateQuery): Json[] {
	return q.measurements.flatMap(({ type }, m) => {
		const s = summaries[m] ?? emptySummary();
		return q.aggregates.map((aggregate) => cell(aggregate, type, s));
	});
}

function cell(aggregate: Aggregate, type: MeasurementType, s: Summary): Json {
	const some = s.count > 0;
	switch (aggregate) {
		case "count":
			return s.count;
		case "sum":
			return some && SUMMABLE.has(type) ? s.sum : null;
		case "avg":
			return some && SUMMABLE.has(type) ? s.sum / s.count : null;
		case "min":
			return ORDERED.has(type) ? s.min : null;
		case "max":
			return ORDERED.has(type) ? s.max : null;
		case "first":
			return s.first?.value ?? null;
		case "last":
			return s.last?.value ?? null;
	}
}

// Raw points: a null value (one that did not fit its type) makes a row but adds nothing.
export function aggregateRaw(points: Point[], q: AggregateQuery): Bucket[] {
	return aggregate(
		points.map(({ ts, seq, entry, twin, dims, measurement, value }) => {
			const mark = value === null ? null : { ts, seq, twin, dims, entry };
			const number = typeof value === "number" ? value : null;
			const part: Part = {
				count: value === null ? 0 : 1,
				sum: number,
				min: number,
				max: number,
				first: value,
				firstMark: mark,
				last: value,
				lastMark: mark,
			};
			return { ts, twin, dims, measurement, part };
		}),
		q,
	);
}

// Rollup rows of a tier whose step divides the query's. A row with count 0 (its points' values
// were all null) still makes a row, as its points would.
export function aggregateRollups(rows: RollupRow[], q: AggregateQuery): Bucket[] {
	return aggregate(
		rows.map((row) => {
			const { twin, dims } = row;
			const mark = (ts: number | null, seq: number | null): Mark | null =>
				ts === null || seq === null ? null : { ts, seq, twin, dims, entry: "" };
			const part: Part = {
				count: row.count,
				sum: row.sum,
				min: row.min,
				max: row.max,
				first: row.first,
				firstMark: row.count > 0 ? mark(row.first_ts, row.first_seq) : null,
				last: row.last,
				lastMark: row.count > 0 ? mark(row.last_ts, row.last_seq) : null,
			};
			return { ts: row.bucket, twin, dims, measurement: row.measurement, part };
		}),
		q,
	);
}

import type { AggregateQuery, Bucket } from "./aggregate";

// `fill` of a query with `step` (docs/timeseries.md): a row for every bucket from `from` to `to`,
// and for `previous` and `linear` the nulls of the number columns filled, for one series (fill
// with group_by is refused before a query runs). A query answers a page at a time, so the
// function takes a slice of buckets and a carry, and calling it on consecutive slices, each with
// the carry the one before returned, gives the rows one call over the whole range would.
//
// `previous` needs only the past, which the carry holds. `linear` also needs the nearest later
// value, which may lie past the slice. The function does not guess: it answers such a null as
// if no later value existed, and says how many trailing rows are `pending` in that way. The
// caller then either
// - answers them, when nothing later exists (the slice ends the query, or the rows read ahead
//   reach its end), and goes on with `carry`, which stands after every row returned; or
// - holds them back and calls again from the first of them with `resume`, which stands before
//   them (it is `carry` when nothing is pending); or
// - reads ahead: rows of later buckets passed as `ahead` end the lines but are not answered.
// A caller that holds back must let its next slice reach further, or it makes no progress
// through a long run of empty buckets. Neither carry holds rows, so it stays small in a page
// cursor however long such a run is.

export type Fill = "null" | "previous" | "linear";

// Per cell column, the latest value a row held (not one filled in) and its bucket's start.
export type FillState = { last: ({ start: number; value: number } | null)[] };

export type FillOptions = AggregateQuery & {
	fill: Fill;
	// Bucket starts, both included, multiples of `step`.
	from: number;
	to: number;
	carry?: FillState;
	ahead?: Bucket[];
};

export type FillResult = { rows: Bucket[]; carry: FillState; resume: FillState; pending: number };

// The columns `previous` and `linear` fill: sum and avg, and min to last of the types that are
// numbers. count is never null.
export function numberColumns(q: AggregateQuery): boolean[] {
	return q.measurements.flatMap(({ type }) =>
		q.aggregates.map(
			(a) =>
				a === "sum" ||
				a === "avg" ||
				(a !== "count" && (type === "integer" || type === "float" || type === "timestamp")),
		),
	);
}

type Known = { start: number; value: number } | null;

export function fillRows(given: Bucket[], options: FillOptions): FillResult {
	if (options.groupBy.length > 0) throw new Error("fill applies to one series only");
	const { step, from, to, fill } = options;
	const byStart = new Map(given.map((row) => [row.start, row]));
	const empty = options.measurements.flatMap(() => options.aggregates.map((a) => (a === "count" ? 0 : null)));
	const rows: Bucket[] = [];
	for (let start = from; start <= to; start += step)
		rows.push({ start, group: [], cells: [...(byStart.get(start)?.cells ?? empty)] });
	const starts = rows.map((row) => row.start);
	const before: Known[] = options.carry?.last ?? empty.map(() => null);
	const numbers = numberColumns(options);
	let firstPending = rows.length;
	// Each column's values as the rows hold them, read before any is filled: only held values
	// end a line or go into the carry.
	const held = numbers.map((_, c) =>
		rows.map((row) => (typeof row.cells[c] === "number" ? (row.cells[c] as number) : null)),
	);
	if (fill !== "null") {
		for (let c = 0; c < numbers.length; c++) {
			if (!numbers[c]) continue;
			const filled =
				fill === "previous"
					? { values: fillPrevious(held[c], before[c]), pendingFrom: rows.length }
					: fillLinear(held[c], starts, before[c], laterAhead(options.ahead ?? [], to, c));
			filled.values.forEach((value, i) => {
				if (rows[i].cells[c] === null) rows[i].cells[c] = value;
			});
			firstPending = Math.min(firstPending, filled.pendingFrom);
		}
	}
	return {
		rows,
		carry: { last: lastHeld(held, starts, rows.length, before) },
		resume: { last: lastHeld(held, starts, firstPending, before) },
		pending: rows.length - firstPending,
	};
}

// Each column's latest held value in the rows before `end`, else the one carried in.
function lastHeld(held: (number | null)[][], starts: number[], end: number, before: Known[]): Known[] {
	return before.map((known, c) => {
		for (let i = end - 1; i >= 0; i--) {
			const value = held[c][i];
			if (value !== null) return { start: starts[i], value };
		}
		return known;
	});
}

function fillPrevious(values: (number | null)[], carried: Known): (number | null)[] {
	let last = carried?.value ?? null;
	return values.map((value) => {
		if (value !== null) last = value;
		return last;
	});
}

// The values with each null on the line through the nearest held values around it, and the
// index of the first null that has an earlier value but no later one this call has seen
// (the number of values when none).
function fillLinear(
	values: (number | null)[],
	starts: number[],
	carried: Known,
	ahead: Known,
): { values: (number | null)[]; pendingFrom: number } {
	// The nearest later held value of each index, found from the end.
	const later: Known[] = new Array(values.length);
	let next = ahead;
	for (let i = values.length - 1; i >= 0; i--) {
		later[i] = next;
		const value = values[i];
		if (value !== null) next = { start: starts[i], value };
	}
	let earlier = carried;
	let pendingFrom = values.length;
	const filled = values.map((value, i) => {
		if (value !== null) {
			earlier = { start: starts[i], value };
			return value;
		}
		const end = later[i];
		if (earlier === null) return null;
		if (end === null) {
			pendingFrom = Math.min(pendingFrom, i);
			return null;
		}
		return earlier.value + ((end.value - earlier.value) * (starts[i] - earlier.start)) / (end.start - earlier.start);
	});
	return { values: filled, pendingFrom };
}

// The first value of column `c` in the rows read ahead, past `to`.
function laterAhead(ahead: Bucket[], to: number, c: number): Known {
	for (const row of ahead) {
		const value = row.cells[c];
		if (row.start > to && typeof value === "number") return { start: row.start, value };
	}
	return null;
}

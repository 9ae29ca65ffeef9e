import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { type Json, utf8Bytes } from "../base/json";
import { now } from "../base/time";
import { dbOf } from "../db/client";
import { chunksBetween, type TimeseriesTableRow } from "../db/timeseries";
import type { Rule } from "../rules/ast";
import { evaluate, type Scope } from "../rules/evaluate";
import { Budget, BudgetExceeded, overBudget, WORK_UNITS } from "../rules/strings";
import { periodSeconds } from "../rules/timeseries-definition";
import {
	type Aggregate,
	aggregateRaw,
	aggregateRollups,
	type AggregateQuery,
	type Bucket,
	stepColumns,
} from "../timeseries/aggregate";
import { chunkObject } from "../timeseries/chunk-client";
import { type Fill, type FillState, fillRows } from "../timeseries/fill";
import { chunkSeconds, chunkStart, measurementKey, pointTable } from "../timeseries/spec";
import type { Point, RawPosition, RollupPosition, RollupRow, Tier } from "../timeseries/types";
import type { Context } from "./operation";

// The pages of query_timeseries_table (docs/timeseries.md, "Queries"): stored rows read from the
// chunk objects a range meets, in order, each read starting at a key (no OFFSET); raw points as
// rows, or whole buckets aggregated and filled. A page reads at most `count` stored rows (one
// more with a step, to see where a bucket ends) and MAX_CHUNKS objects, answers at most `count`
// rows, and stops before 4 MiB.

const MAX_CHUNKS = 16;
const MAX_PAGE_BYTES = 4 * 1024 * 1024;
export const FILLS = ["none", "null", "previous", "linear"] as const;

type SecretContext = Context & { caller: Caller };

// The query as planned from its parameters (timeseries-query.ts).
export type Plan = {
	table: TimeseriesTableRow;
	ge: number;
	le: number;
	step: number | null;
	aggregates: Aggregate[];
	measurements: string[];
	groupBy: string[];
	fill: (typeof FILLS)[number];
	desc: boolean;
	match: Rule | null;
};

// Where a page stopped: the tier read, the chunk, and the last row examined in it (null: the
// chunk's start).
// With `fill`, the bucket the next page fills from, and what the buckets before it held.
export type Position = { tier: Tier; chunk: number; after: RawPosition | RollupPosition | null; fill?: FillCarry };
export type FillCarry = { from: number; carry: FillState };

function dimsScope(plan: Plan, point: { twin: string; dims: Json[] }, budget: Budget): Scope {
	const none = null as unknown as string;
	const dims = Object.fromEntries(plan.table.dimensions.names.map((name, i) => [name, point.dims[i] ?? null]));
	return {
		twin: { uuid: point.twin, owner: none, status: none, description: null },
		user: { account: none, user: none, role: none, description: null },
		now: none as unknown as number,
		budget,
		dims,
	};
}

type Stored = { kind: "raw"; row: Point } | { kind: "rollup"; row: RollupRow };

// Reads stored rows of the tier in order from the position, across chunk objects: at most
// `limit` rows and MAX_CHUNKS objects. Answers the rows, the position after the last one, and
// whether the walk reached the end of the range.
async function readRows(ctx: SecretContext, plan: Plan, from: Position, limit: number) {
	const { table } = plan;
	const key = { table: table.uuid, generation: table.generation };
	const lo = chunkStart(table, plan.step ? Math.floor(plan.ge / plan.step) * plan.step : plan.ge);
	const hi = chunkStart(table, plan.le);
	const chunks = plan.desc
		? await chunksBetween(dbOf(ctx), key, lo, Math.min(hi, from.chunk), true, MAX_CHUNKS + 1)
		: await chunksBetween(dbOf(ctx), key, Math.max(lo, from.chunk), hi, false, MAX_CHUNKS + 1);
	// With a step, whole buckets: from the start of ge's to the end of le's (a point's time has
	// millisecond precision), so that raw points and every tier answer alike.
	const range = plan.step
		? {
				ge: Math.floor(plan.ge / plan.step) * plan.step,
				le: (Math.floor(plan.le / plan.step) + 1) * plan.step - 0.0005,
			}
		: { ge: plan.ge, le: plan.le };
	// A shorter retention applies to raw points at once, before the chunks' alarms drop them.
	const retention = periodSeconds(table.retention);
	const rawFloor = retention === null ? 0 : now() - retention;
	const rows: Stored[] = [];
	let objects = 0;
	let position: Position = from;
	let end = true;
	for (const { start } of chunks) {
		if (objects >= MAX_CHUNKS || rows.length >= limit) {
			end = false;
			position = position.chunk === start ? position : { tier: from.tier, chunk: start, after: null };
			break;
		}
		objects++;
		const after = start === from.chunk ? from.after : null;
		const want = limit - rows.length;
		const read = await chunkObject(ctx.env, table.uuid, table.generation, start).read({
			tier: from.tier,
			ge: from.tier === "raw" ? Math.max(range.ge, rawFloor) : range.ge,
			le: range.le,
			after,
			desc: plan.desc,
			limit: want,
		});
		const got: Stored[] = read.raw
			? read.raw.map((row) => ({ kind: "raw" as const, row }))
			: (read.rollup ?? []).map((row) => ({ kind: "rollup" as const, row }));
		rows.push(...got);
		const last = got[got.length - 1];
		position = { tier: from.tier, chunk: start, after: last ? positionOf(last) : after };
		if (got.length >= want) {
			end = false;
			break;
		}
		// This chunk is done: the next page starts past it.
		const next = plan.desc ? start - chunkSeconds(table) : start + chunkSeconds(table);
		position = { tier: from.tier, chunk: next, after: null };
	}
	return { rows, position, end, objects };
}

function positionOf(stored: Stored): RawPosition | RollupPosition {
	if (stored.kind === "raw") return { ts: stored.row.ts, seq: stored.row.seq, entry: stored.row.entry };
	const { bucket, twin, dims, measurement } = stored.row;
	return { bucket, twin, dims: JSON.stringify(dims), measurement };
}

type Page = { columns: string[]; rows: Json[][]; next: Position | null; objects: number; rowsRead: number };

// Raw points: one row each, `_timestamp, twin, <dimensions>, <measurements>`, a point filling its
// own measurement's column.
export async function rawPage(ctx: SecretContext, plan: Plan, from: Position, count: number): Promise<Page> {
	const { table } = plan;
	const columns = ["_timestamp", "twin", ...table.dimensions.names, ...plan.measurements];
	const keys = plan.measurements.map((name) => measurementKey(table, name));
	const read = await readRows(ctx, plan, from, count);
	const budget = new Budget(WORK_UNITS);
	const rows: Json[][] = [];
	let bytes = 0;
	let next: Position | null = read.end ? null : read.position;
	for (const [i, stored] of read.rows.entries()) {
		if (stored.kind !== "raw") continue;
		const point = stored.row;
		const column = keys.indexOf(point.measurement);
		if (column < 0) continue;
		if (!passes(plan, stored, budget)) continue;
		const row: Json[] = [point.ts, point.twin, ...table.dimensions.names.map((_, d) => point.dims[d] ?? null)];
		for (let m = 0; m < plan.measurements.length; m++) row.push(m === column ? point.value : null);
		bytes += utf8Bytes(JSON.stringify(row)) + 1;
		if (rows.length > 0 && bytes > MAX_PAGE_BYTES) {
			// Stop before this row: the next page starts at it.
			next = after(plan, from, read.rows.slice(0, i));
			break;
		}
		rows.push(row);
	}
	return { columns, rows, next, objects: read.objects, rowsRead: read.rows.length };
}

// The bucket a stored row counts in.
function bucketOf(stored: Stored, step: number): number {
	const at = stored.kind === "raw" ? stored.row.ts : stored.row.bucket;
	return Math.floor(at / step) * step;
}

// `match` on one stored row. Its rule shares one work budget over the page; past it the query
// is refused, naming the rule: a page answers every row it examined or none.
function passes(plan: Plan, stored: Stored, budget: Budget): boolean {
	if (plan.match === null) return true;
	try {
		return evaluate(plan.match, dimsScope(plan, stored.row, budget));
	} catch (error) {
		if (error instanceof BudgetExceeded) throw overBudget("match", error, ": lower count");
		throw error;
	}
}

// Buckets of the tier's stored rows: only whole ones (a read of one row more than `count` shows
// where the last one ends), a row per (bucket, group) of the requested measurements that pass
// `match`; with `fill`, a row per bucket of the range. A page answers at most `count` rows and
// stops before 4 MiB, at a bucket's start: the cursor then holds the last stored row before
// that bucket, and where the fill goes on.
export async function stepPage(ctx: SecretContext, plan: Plan, from: Position, count: number): Promise<Page> {
	const step = plan.step!;
	const types = pointTable(plan.table).measurements;
	const q: AggregateQuery = {
		step,
		// Points are stored under each measurement's key (timeseries/spec.ts).
		measurements: plan.measurements.map((name) => ({
			name: measurementKey(plan.table, name),
			type: types.types[types.names.indexOf(name)] ?? "json",
		})),
		aggregates: plan.aggregates,
		groupBy: plan.groupBy.map((name) =>
			name === "twin"
				? { kind: "twin" as const }
				: { kind: "dim" as const, index: plan.table.dimensions.names.indexOf(name) },
		),
	};
	const columns = stepColumns(plan.groupBy, plan.measurements, plan.aggregates);
	const read = await readRows(ctx, plan, from, count + 1);
	let stored = read.rows;
	let next: Position | null = read.end ? null : read.position;
	if (stored.length > count) {
		const open = bucketOf(stored[count]!, step);
		stored = stored.slice(0, count).filter((row) => bucketOf(row, step) !== open);
		if (stored.length === 0)
			throw new ApiError("bucket_too_large", {
				description: `A bucket holds more than ${count} stored rows of the ${from.tier} tier: raise count`,
			});
		next = after(plan, from, stored);
	}
	const budget = new Budget(WORK_UNITS);
	const kept = stored.filter((row) => passes(plan, row, budget));
	const raw = kept.flatMap((row) => (row.kind === "raw" ? [row.row] : []));
	const rollups = kept.flatMap((row) => (row.kind === "rollup" ? [row.row] : []));
	const buckets = from.tier === "raw" ? aggregateRaw(raw, q) : aggregateRollups(rollups, q);
	// Ascending here; a descending page is reversed last.
	const page =
		plan.fill === "none"
			? { rows: buckets, next, fill: undefined as FillCarry | undefined }
			: filledPage(plan, q, from, buckets, { stored, next });
	const cut = cutAt(page.rows, count, plan.desc);
	let rows = page.rows;
	let fill = page.fill;
	if (cut !== undefined) {
		rows = page.rows.filter((row) => (plan.desc ? row.start > cut : row.start < cut));
		next = after(
			plan,
			from,
			stored.filter((row) => (plan.desc ? bucketOf(row, step) > cut : bucketOf(row, step) < cut)),
		);
		if (plan.fill !== "none") {
			const known = buckets.filter((row) => row.start < cut);
			const start = from.fill?.from ?? firstBucket(plan);
			const carry =
				plan.desc || plan.fill === "null"
					? (from.fill?.carry ?? { last: [] })
					: fillRows(known, { ...q, fill: plan.fill, from: start, to: cut - step, carry: from.fill?.carry }).carry;
			fill = { from: cut, carry };
		}
	} else next = page.next;
	if (next && fill) next = { ...next, fill };
	if (plan.desc) rows = [...rows].reverse();
	return {
		columns,
		rows: rows.map((b) => [b.start, ...b.group, ...b.cells]),
		next,
		objects: read.objects,
		rowsRead: read.rows.length,
	};
}

// The first bucket a walk fills: the one holding ge, or le's for a descending walk.
function firstBucket(plan: Plan): number {
	const step = plan.step!;
	return Math.floor((plan.desc ? plan.le : plan.ge) / step) * step;
}

// Where the next page starts when this one answers only `kept` of its stored rows (whole
// buckets): after the last of them, or where this page started when it keeps none.
function after(plan: Plan, from: Position, kept: Stored[]): Position {
	const last = kept[kept.length - 1];
	if (!last) return { tier: from.tier, chunk: from.chunk, after: from.after };
	const chunk = chunkStart(plan.table, last.kind === "raw" ? last.row.ts : last.row.bucket);
	return { tier: from.tier, chunk, after: positionOf(last) };
}

// The bucket a page stops before, if it must: past `count` rows, or 4 MiB of answer (always
// after the first bucket). Rows are ascending; a descending page stops at the low end.
function cutAt(rows: Bucket[], count: number, desc: boolean): number | undefined {
	const ordered = desc ? [...rows].reverse() : rows;
	let bytes = 0;
	for (const [i, row] of ordered.entries()) {
		bytes += utf8Bytes(JSON.stringify([row.start, ...row.group, ...row.cells])) + 1;
		const first = ordered[0]!.start === row.start;
		if (!first && (i >= count || bytes > MAX_PAGE_BYTES)) return row.start;
	}
	return undefined;
}

// `fill`: a row for every bucket between where the walk stands and the last whole bucket read
// (the end of the range on the last page). `linear` holds back a page's trailing nulls that
// only a later value could fill, when a later page may have one: the next page starts at the
// first of them. A descending walk fills only with null (previous and linear are refused).
function filledPage(
	plan: Plan,
	q: AggregateQuery,
	from: Position,
	buckets: Bucket[],
	read: { stored: Stored[]; next: Position | null },
): { rows: Bucket[]; next: Position | null; fill: FillCarry | undefined } {
	const step = plan.step!;
	const { stored, next } = read;
	const start = from.fill?.from ?? firstBucket(plan);
	const edge = stored.length ? bucketOf(stored[stored.length - 1]!, step) : undefined;
	if (plan.desc) {
		const bottom = next === null ? Math.floor(plan.ge / step) * step : (edge ?? start + step);
		const filled = fillRows(buckets, { ...q, fill: "null", from: bottom, to: start });
		return { rows: filled.rows, next, fill: { from: bottom - step, carry: { last: [] } } };
	}
	const to = next === null ? Math.floor(plan.le / step) * step : (edge ?? start - step);
	const filled = fillRows(buckets, { ...q, fill: plan.fill as Fill, from: start, to, carry: from.fill?.carry });
	if (next && filled.pending > 0 && filled.pending < filled.rows.length) {
		const first = filled.rows[filled.rows.length - filled.pending]!.start;
		const before = stored.filter((row) => bucketOf(row, step) < first);
		return {
			rows: filled.rows.slice(0, filled.rows.length - filled.pending),
			next: after(plan, from, before),
			fill: { from: first, carry: filled.resume },
		};
	}
	return { rows: filled.rows, next, fill: { from: to + step, carry: filled.carry } };
}

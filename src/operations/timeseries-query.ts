import * as z from "zod/mini";
import type { Caller } from "../base/caller";
import { sha256Hex } from "../base/crypto";
import { ApiError, type ErrorDetail } from "../base/errors";
import { type Json, utf8Bytes } from "../base/json";
import { now } from "../base/time";
import { dbOf } from "../db/client";
import { chunksBetween, type TimeseriesTableRow } from "../db/timeseries";
import type { Rule } from "../rules/ast";
import { evaluate, type Scope } from "../rules/evaluate";
import { ruleOf } from "../rules/stored";
import { Budget, BudgetExceeded, overBudget, WORK_UNITS } from "../rules/strings";
import { periodSeconds } from "../rules/timeseries-definition";
import { chunkObject } from "../timeseries/chunk-client";
import { chunkSeconds, chunkStart, measurementKey } from "../timeseries/spec";
import {
	ROLLUP_STEPS,
	type Point,
	type RawPosition,
	type RollupPosition,
	type RollupRow,
	type Tier,
} from "../timeseries/types";
import {
	type Aggregate,
	aggregateRaw,
	aggregateRollups,
	type AggregateQuery,
	type Bucket,
	stepColumns,
} from "../timeseries/aggregate";
import { type Fill, type FillState, fillRows } from "../timeseries/fill";
import { pointTable } from "../timeseries/spec";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { cursorIn, cursorOut, openCursor, pageLimit, sealCursor } from "./paging";
import { queryBoolean, queryTimestamp, ruleText } from "./schemas";
import { ownTimeseries, timeseriesParams } from "./timeseries";

// query_timeseries_table (docs/timeseries.md, "Queries"): a page of a table's points, raw or
// aggregated by step, read from the chunk objects its range meets in order. A page examines at
// most `count` stored rows of its tier (one more to see where a bucket ends), calls at most
// MAX_CHUNKS chunk objects and stops before its answer passes 4 MiB; the cursor holds where it
// stopped. Nothing is skipped by OFFSET: every chunk read starts at a key.

export const MAX_CHUNKS = 16;
const MAX_COLUMNS = 1 + 9 + 32 * 7;
const MAX_PAGE_BYTES = 4 * 1024 * 1024;
const MAX_RANGE_SECONDS = 366 * 86_400;
// How long a consistent query waits for the account's pending points.
const CONSISTENT_WAIT_MS = 5000;
const AGGREGATES = ["count", "sum", "avg", "min", "max", "first", "last"] as const;
const FILLS = ["none", "null", "previous", "linear"] as const;

type SecretContext = Context & { caller: Caller };

const STEP = /^([1-9][0-9]{0,5})([smhd]?)$/;
const UNIT_SECONDS: Record<string, number> = { "": 1, s: 1, m: 60, h: 3600, d: 86_400 };

// A step in seconds: it divides a day, so buckets never cross a chunk (chunks are whole days).
function stepSeconds(text: string): number | undefined {
	const match = STEP.exec(text);
	if (!match) return undefined;
	const seconds = Number(match[1]) * UNIT_SECONDS[match[2] ?? ""]!;
	return seconds <= 86_400 && 86_400 % seconds === 0 ? seconds : undefined;
}

// A comma-separated list of names from `known`: an unknown or repeated one is refused.
function listOf(path: string, text: string, known: readonly string[], details: ErrorDetail[]): string[] {
	const names = text.split(",");
	const seen = new Set<string>();
	for (const name of names) {
		if (!known.includes(name)) details.push({ path, message: `Unknown name '${name}'` });
		else if (seen.has(name)) details.push({ path, message: `'${name}' is given twice` });
		seen.add(name);
	}
	return names;
}

const query = z.strictObject({
	ge: queryTimestamp,
	le: queryTimestamp,
	step: z.optional(z.string()),
	aggregates: z.optional(z.string()),
	measurements: z.optional(z.string()),
	match: z.optional(ruleText),
	group_by: z.optional(z.string()),
	fill: z._default(z.optional(z.enum(FILLS)), "none"),
	order: z._default(z.optional(z.enum(["asc", "desc"])), "asc"),
	count: z._default(z.optional(pageLimit(10_000)), 1000),
	cursor: z.optional(cursorIn),
	consistent: z._default(z.optional(queryBoolean), false),
});
type Query = z.infer<typeof query>;

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

// The query as it reads: every check of a parameter that needs the table (400101, all at once).
function planOf(table: TimeseriesTableRow, q: Query): Plan {
	const details: ErrorDetail[] = [];
	if (q.le < q.ge) details.push({ path: "le", message: "Must not be before ge" });
	else if (q.le > q.ge + MAX_RANGE_SECONDS) details.push({ path: "le", message: "At most 366 days after ge" });
	const step = q.step === undefined ? null : (stepSeconds(q.step) ?? null);
	if (q.step !== undefined && step === null)
		details.push({ path: "step", message: "Must be <n> seconds or <n>s, m, h or d, dividing a day" });
	const measurements =
		q.measurements === undefined
			? table.measurements.names
			: listOf("measurements", q.measurements, table.measurements.names, details);
	const aggregates = (
		q.aggregates === undefined ? ["avg"] : listOf("aggregates", q.aggregates, AGGREGATES, details)
	) as Aggregate[];
	const groupBy =
		q.group_by === undefined ? [] : listOf("group_by", q.group_by, ["twin", ...table.dimensions.names], details);
	if (q.step === undefined) {
		for (const name of ["aggregates", "group_by"] as const)
			if (q[name] !== undefined) details.push({ path: name, message: "Needs step" });
		if (q.fill !== "none") details.push({ path: "fill", message: "Needs step" });
	} else if (q.fill !== "none" && groupBy.length) {
		details.push({ path: "fill", message: "Cannot fill with group_by: a group is known by its points only" });
	} else if ((q.fill === "previous" || q.fill === "linear") && q.order === "desc") {
		// A descending walk meets a bucket's earlier values only on later pages.
		details.push({ path: "fill", message: "previous and linear fill need order asc" });
	}
	if (details.length)
		throw new ApiError("validation", { description: `${details[0]!.path}: ${details[0]!.message}`, details });
	return {
		table,
		ge: q.ge,
		le: q.le,
		step,
		aggregates,
		measurements,
		groupBy,
		fill: q.fill,
		desc: q.order === "desc",
		match: q.match === undefined ? null : ruleOf(q.match),
	};
}

// Among raw and the ready tiers whose step divides the query's, the coarsest whose retention
// reaches ge; if none does, the one that keeps the longest.
export function tierOf(plan: Plan, at: number): Tier {
	if (plan.step === null) return "raw";
	const { table } = plan;
	const candidates: { tier: Tier; seconds: number; retention: number | null }[] = [
		{ tier: "raw", seconds: 0, retention: periodSeconds(table.retention) },
		...table.rollups
			.filter((r) => r.step in ROLLUP_STEPS && !table.building.includes(r.step))
			.map((r) => ({
				tier: r.step as Tier,
				seconds: ROLLUP_STEPS[r.step as keyof typeof ROLLUP_STEPS],
				retention: periodSeconds(r.retention),
			}))
			.filter((c) => plan.step! % c.seconds === 0),
	];
	const reaching = candidates.filter((c) => c.retention === null || at - c.retention <= plan.ge);
	if (reaching.length) return reaching.reduce((a, b) => (b.seconds > a.seconds ? b : a)).tier;
	return candidates.reduce((a, b) => ((b.retention ?? Infinity) > (a.retention ?? Infinity) ? b : a)).tier;
}

// Where a page stopped: the tier read, the chunk, and the last row examined in it (null: the
// chunk's start).
// With `fill`, the bucket the next page fills from, and what the buckets before it held.
type Position = { tier: Tier; chunk: number; after: RawPosition | RollupPosition | null; fill?: FillCarry };
type FillCarry = { from: number; carry: FillState };
const positionShape = z.tuple([
	z.string(),
	z.number(),
	z.nullable(z.record(z.string(), z.union([z.string(), z.number()]))),
	z.nullable(z.unknown()),
]);

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

export const queryTimeseriesTable = defineOperation({
	name: "query_timeseries_table",
	summary: "A page of a Timeseries table's points, raw or aggregated by step",
	description:
		"Points of one Timeseries table between ge and le: raw, or with step aggregated per bucket (count, sum, avg, min, max, first, last), optionally by group and filled; paged by cursor. consistent=true first delivers the account's pending points (503221 after 5 s). A role with a twin or an entry rule may not use Timeseries tables (403102).",
	refuses: ["escalation", "not_found", "invalid_cursor", "bucket_too_large", "timeseries_pending"],
	auth: "secret",
	params: timeseriesParams,
	locate: ownTimeseries,
	query,
	response: z.object({
		cursor: cursorOut,
		resolution: z.string(),
		// `_timestamp`, twin, 8 dimensions and 32 measurements; or `_timestamp`, 9 groups and 32 × 7 cells.
		columns: z.array(z.string()).check(z.maxLength(MAX_COLUMNS)),
		rows: z.array(z.array(z.unknown()).check(z.maxLength(MAX_COLUMNS))).check(z.maxLength(10_000)),
	}),
	async run({ located: table, query: q }, ctx) {
		const plan = planOf(table, q);
		if (q.consistent) await deliverPending(ctx);
		const started = Date.now();
		const { cursor: _, count, consistent: __, ...rest } = q;
		const scope = `query_timeseries_table/${table.uuid}/${table.generation}/${await sha256Hex(JSON.stringify(rest))}`;
		const opened = await openCursor(ctx.env, scope, q.cursor, positionShape);
		const from: Position = opened
			? {
					tier: opened[0] as Tier,
					chunk: opened[1],
					after: opened[2] as Position["after"],
					...(opened[3] ? { fill: opened[3] as FillCarry } : {}),
				}
			: { tier: tierOf(plan, now()), chunk: plan.desc ? Number.MAX_SAFE_INTEGER : -1, after: null };
		const page = plan.step === null ? await rawPage(ctx, plan, from, count) : await stepPage(ctx, plan, from, count);
		ctx.meter.metrics.push(
			`tsdb;dur=${Date.now() - started};desc="objects=${page.objects} rows_read=${page.rowsRead}"`,
		);
		const { next } = page;
		const cursor = next
			? await sealCursor(ctx.env, scope, [next.tier, next.chunk, next.after, next.fill ?? null])
			: null;
		return { cursor, resolution: from.tier, columns: page.columns, rows: page.rows };
	},
});

// The account's object delivers every pending point first, within CONSISTENT_WAIT_MS.
async function deliverPending(ctx: SecretContext) {
	let timer: ReturnType<typeof setTimeout> | null = null;
	const timeout = new Promise<false>((resolve) => {
		timer = setTimeout(() => resolve(false), CONSISTENT_WAIT_MS);
	});
	// Not a write: the object answers a boolean, not an outcome of the client's kind.
	const object = ctx.env.ACCOUNTS.getByName(ctx.caller.account) as unknown as {
		deliverTimeseries(account: string): Promise<boolean>;
	};
	const delivered = object.deliverTimeseries(ctx.caller.account).catch(() => false);
	const done = await Promise.race([delivered, timeout]);
	clearTimeout(timer);
	if (done !== true) throw new ApiError("timeseries_pending", { headers: { "retry-after": "1" } });
}

type Page = { columns: string[]; rows: Json[][]; next: Position | null; objects: number; rowsRead: number };

// Raw points: one row each, `_timestamp, twin, <dimensions>, <measurements>`, a point filling its
// own measurement's column.
async function rawPage(ctx: SecretContext, plan: Plan, from: Position, count: number): Promise<Page> {
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
async function stepPage(ctx: SecretContext, plan: Plan, from: Position, count: number): Promise<Page> {
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

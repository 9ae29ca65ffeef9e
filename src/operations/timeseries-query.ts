import * as z from "zod/mini";
import type { Caller } from "../base/caller";
import { sha256Hex } from "../base/crypto";
import { ApiError, type ErrorDetail } from "../base/errors";
import { now } from "../base/time";
import type { TimeseriesTableRow } from "../db/timeseries";
import { ruleOf } from "../rules/stored";
import { periodSeconds } from "../rules/timeseries-definition";
import { ROLLUP_STEPS, type Tier } from "../timeseries/types";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { cursorIn, cursorOut, openCursor, pageLimit, sealCursor } from "./paging";
import { queryBoolean, queryTimestamp, ruleText } from "./schemas";
import { ownTimeseries, timeseriesParams } from "./timeseries";
import { AGGREGATES, type Aggregate } from "../timeseries/aggregate";
import { FILLS, type FillCarry, type Plan, type Position, rawPage, stepPage } from "./timeseries-pages";

// query_timeseries_table (docs/timeseries.md, "Queries"): a page of a table's points, raw or
// aggregated by step. Here the parameters are checked, the tier chosen, the cursor opened and
// sealed; the pages themselves are read in timeseries-pages.ts.

const MAX_COLUMNS = 1 + 9 + 32 * 7;
const MAX_RANGE_SECONDS = 366 * 86_400;
// How long a consistent query waits for the account's pending points.
const CONSISTENT_WAIT_MS = 5000;

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

const positionShape = z.tuple([
	z.string(),
	z.number(),
	z.nullable(z.record(z.string(), z.union([z.string(), z.number()]))),
	z.nullable(z.unknown()),
]);

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

import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { timeseriesRecord } from "../account/timeseries-tables";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { MAX_TIMESERIES_TABLES_CEILING } from "../base/limits";
import { dbOf } from "../db/client";
import { findTimeseriesTable, listTimeseriesTables, type TimeseriesTableRow } from "../db/timeseries";
import { checkTimeseriesAccess } from "../policy/timeseries";
import { checkTimeseriesDefinition, TIMESERIES_NAME } from "../rules/timeseries-definition";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { mapOf, timestampOut } from "./schemas";

// Timeseries tables (docs/timeseries.md): the history of ledger values, one point per committed
// value change of the entries naming a table, kept in chunk objects with their rollups.
// Definitions are written by the account's object; the Worker reads them, and pages of points
// (timeseries-query.ts).

const MAX_TABLES_PER_CREATE = 10;
const MAX_DIMENSIONS = 8;
const MAX_MEASUREMENTS = 32;

type SecretContext = Context & { caller: Caller };

const STATUSES = ["building", "ready", "full"] as const;

const columns = (most: number) =>
	z.strictObject({
		names: z.array(z.string()).check(z.maxLength(most + 1)),
		types: z.array(z.string()).check(z.maxLength(most + 1)),
	});
const templates = z.strictObject({
	measurement: z.optional(z.string()),
	dimensions: z.optional(z.record(z.string(), z.string())),
	timestamp: z.optional(z.string()),
});
const rollups = z.array(z.strictObject({ step: z.string(), retention: z.string() })).check(z.maxLength(4));

const definitionFields = {
	dimensions: columns(MAX_DIMENSIONS),
	measurements: columns(MAX_MEASUREMENTS),
	defaults: z.optional(z.nullable(templates)),
	retention: z.optional(z.string()),
	chunk: z.optional(z.string()),
	rollups: z.optional(rollups),
	// The original's Postgres: only its default, and not stored.
	database: z.optional(z.nullable(z.literal("default"))),
};

// The pure checks of a definition, with the defaults a create fills in, as issues at their paths.
const definition = z.strictObject(definitionFields).check(
	z.superRefine((value, ctx) => {
		const { database: _, ...given } = value;
		const complete = {
			...given,
			defaults: given.defaults ?? null,
			retention: given.retention ?? "INF",
			chunk: given.chunk ?? "1W",
			rollups: given.rollups ?? [],
		};
		for (const detail of checkTimeseriesDefinition(complete))
			ctx.addIssue({ code: "custom", message: detail.message, path: detail.path.split(".") });
	}),
);

const timeseriesOut = z.object({
	stats: z.object({ rows: z.number().check(z.int()), table_size: z.number().check(z.int()) }),
	dimensions: z.object({
		names: z.array(z.string()).check(z.maxLength(MAX_DIMENSIONS)),
		types: z.array(z.string()).check(z.maxLength(MAX_DIMENSIONS)),
	}),
	measurements: z.object({
		names: z.array(z.string()).check(z.maxLength(MAX_MEASUREMENTS)),
		types: z.array(z.string()).check(z.maxLength(MAX_MEASUREMENTS)),
	}),
	defaults: z.nullable(
		z.object({
			measurement: z.optional(z.string()),
			dimensions: z.optional(mapOf(z.string(), MAX_DIMENSIONS)),
			timestamp: z.optional(z.string()),
		}),
	),
	retention: z.string(),
	chunk: z.string(),
	rollups: z.array(z.object({ step: z.string(), retention: z.string() })).check(z.maxLength(3)),
	status: z.enum(STATUSES),
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

// Every route first checks the caller may use the tables (403102), before the request is
// validated or any table looked up.
const confined = async (_params: unknown, ctx: SecretContext) => checkTimeseriesAccess(ctx.caller);

// A table of the caller's account by name. Another account's table, and a name outside the
// pattern, answer as an absent one: one lookup through (account, name) either way.
export async function ownTimeseries(params: { timeseries: string }, ctx: SecretContext): Promise<TimeseriesTableRow> {
	checkTimeseriesAccess(ctx.caller);
	const row = TIMESERIES_NAME.test(params.timeseries)
		? await findTimeseriesTable(dbOf(ctx), ctx.caller.account, params.timeseries)
		: undefined;
	if (!row) throw new ApiError("not_found", { description: "No such timeseries table" });
	return row;
}

export const timeseriesParams = z.strictObject({ timeseries: z.string() });

const ACCESS =
	"A role with a twin or an entry rule may not use Timeseries tables (403102): points come from every ledger of the account.";

export const createTimeseriesTable = defineOperation({
	name: "create_timeseries_table",
	summary: "Define Timeseries tables: the history of ledger values, one point per value change",
	description: `Defines up to 10 Timeseries tables of the caller's account: dimensions, measurements, retention, chunk and rollup tiers. Entries name the tables they feed in their timeseries property; a new table is empty and ready. A table that cannot be made answers an error in its place. ${ACCESS}`,
	refuses: ["escalation"],
	example: {
		timeseries: {
			temperatures: {
				dimensions: { names: ["site"], types: ["text"] },
				measurements: { names: ["celsius"], types: ["float"] },
				retention: "1Y",
				rollups: [{ step: "1h", retention: "INF" }],
			},
		},
	},
	auth: "secret",
	locate: confined,
	body: z.strictObject({
		timeseries: z
			.record(z.string().check(z.regex(TIMESERIES_NAME, `Must match ${TIMESERIES_NAME.source}`)), definition)
			.check(
				z.refine(
					(tables) => Object.keys(tables).length >= 1 && Object.keys(tables).length <= MAX_TABLES_PER_CREATE,
					`Must hold 1 to ${MAX_TABLES_PER_CREATE} tables`,
				),
			),
	}),
	status: 201,
	response: z.object({
		timeseries: mapOf(z.union([timeseriesOut, z.object({ error: z.string() })]), MAX_TABLES_PER_CREATE),
	}),
	async run({ body }, ctx) {
		const input = Object.fromEntries(
			Object.entries(body.timeseries).map(([name, { database: _, ...definition }]) => [name, definition]),
		);
		return accountClient(ctx, ctx.caller.account).createTimeseriesTables(ctx.caller, input);
	},
});

export const getTimeseriesTables = defineOperation({
	name: "get_timeseries_tables",
	summary: "The account's Timeseries tables, in name order",
	description: `Every Timeseries table of the caller's account by name. ${ACCESS}`,
	refuses: ["escalation"],
	auth: "secret",
	locate: confined,
	response: z.object({ timeseries: mapOf(timeseriesOut, MAX_TIMESERIES_TABLES_CEILING) }),
	async run(_input, ctx) {
		const rows = await listTimeseriesTables(dbOf(ctx), ctx.caller.account);
		return { timeseries: Object.fromEntries(rows.map((row) => [row.name, timeseriesRecord(row)])) };
	},
});

export const getTimeseriesTable = defineOperation({
	name: "get_timeseries_table",
	summary: "One Timeseries table: its definition, status and point counts",
	description: `One Timeseries table of the caller's account: definition, status and point counts. ${ACCESS}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: timeseriesParams,
	locate: ownTimeseries,
	response: timeseriesOut,
	async run({ located }) {
		return timeseriesRecord(located);
	},
});

export const updateTimeseriesTable = defineOperation({
	name: "update_timeseries_table",
	summary: "Replace parts of a Timeseries table's definition",
	description: `Replaces the given members (defaults, retention, chunk, measurements, rollups). The chunk cannot change; a kept measurement keeps its type and points; a removed rollup tier goes at once, an added one is filled from the retained points in the background (status building). ${ACCESS}`,
	refuses: ["escalation", "not_found"],
	example: { retention: "2Y", rollups: [{ step: "1h", retention: "INF" }] },
	auth: "secret",
	params: timeseriesParams,
	locate: confined,
	body: z
		.strictObject({
			defaults: definitionFields.defaults,
			retention: definitionFields.retention,
			chunk: definitionFields.chunk,
			measurements: z.optional(columns(MAX_MEASUREMENTS)),
			rollups: definitionFields.rollups,
		})
		.check(
			z.refine(
				(b) => Object.values(b).some((value) => value !== undefined),
				"Give defaults, retention, chunk, measurements, rollups or several",
			),
		),
	response: timeseriesOut,
	async run({ params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateTimeseriesTable(ctx.caller, params.timeseries, body);
	},
});

export const deleteTimeseriesTable = defineOperation({
	name: "delete_timeseries_table",
	summary: "Delete a Timeseries table: its name is free at once, its points go in the background",
	description: `Deletes a Timeseries table and answers it as it was: its name is free at once, its points are never answered again and go in the background. ${ACCESS}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: timeseriesParams,
	locate: confined,
	response: timeseriesOut,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteTimeseriesTable(ctx.caller, params.timeseries);
	},
});

export const truncateTimeseriesTable = defineOperation({
	name: "truncate_timeseries_table",
	summary: "Empty a Timeseries table; new value changes feed it again",
	description: `Empties a Timeseries table: its points are never answered again and go in the background; a fill stops. ${ACCESS}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: timeseriesParams,
	locate: confined,
	response: timeseriesOut,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).truncateTimeseriesTable(ctx.caller, params.timeseries);
	},
});

import * as z from "zod/mini";
import { accountClient } from "../account/client";
import type { Caller } from "../base/caller";
import { sha256Hex } from "../base/crypto";
import { ApiError } from "../base/errors";
import { utf8Bytes } from "../base/json";
import { MAX_INDEXES_TABLES_CEILING } from "../base/limits";
import {
	findIndexTable,
	type IndexTableRow,
	listIndexTables,
	type RowKey,
	rowPage,
	TWINS_PER_READ,
	twinVerdicts,
} from "../db/indexes";
import { TWIN_COLUMNS } from "../db/twins";
import { now } from "../base/time";
import { compileRule } from "../rules/compile";
import { isVisible, scopeOf } from "../rules/visibility";
import { checkIndexAccess, type IndexUse } from "../policy/indexes";
import type { Json } from "../rules/ast";
import { evaluate, type Scope } from "../rules/evaluate";
import { checkDefinition, INDEX_NAME, MAX_INDEX_PROPERTIES } from "../rules/index-definition";
import { MAX_RULE_LENGTH } from "../rules/parse";
import { ruleOf } from "../rules/stored";
import { Budget, BudgetExceeded, overBudget, WORK_UNITS } from "../rules/strings";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { cursorIn, cursorOut, openCursor, pageLimit, sealCursor } from "./paging";
import { mapOf, ruleText, timestampOut, uuidOut } from "./schemas";
import { type Database, dbOf } from "../db/client";
import { groupByHome } from "../db/shards";

// Indexes tables (docs/indexes.md): typed rows kept from the account's own ledgers, one per twin
// whose ledger passes the table's rule, current when a ledger write answers. Definitions are
// written by the account's object; rows are read here, a page at a time in twin order.

const MAX_TABLES_PER_CREATE = 10;
// A query page stops before its answer would pass this.
const MAX_PAGE_BYTES = 4 * 1024 * 1024;

type SecretContext = Context & { caller: Caller };

const STATUSES = ["building", "ready", "full"] as const;

const definitionFields = {
	rule: z.string().check(z.maxLength(MAX_RULE_LENGTH)),
	properties: z.strictObject({
		names: z.array(z.string()).check(z.maxLength(MAX_INDEX_PROPERTIES + 1)),
		types: z.array(z.string()).check(z.maxLength(MAX_INDEX_PROPERTIES + 1)),
	}),
	templates: z.strictObject({ properties: z.record(z.string(), z.string()) }),
};

// The pure checks of a definition (rule roots, names, types, templates), as issues at their paths.
const definition = z.strictObject(definitionFields).check(
	z.superRefine((value, ctx) => {
		for (const detail of checkDefinition(value))
			ctx.addIssue({ code: "custom", message: detail.message, path: detail.path.split(".") });
	}),
);

const indexOut = z.object({
	stats: z.object({ rows: z.number().check(z.int()), table_size: z.number().check(z.int()) }),
	rule: z.string(),
	properties: z.object({
		names: z.array(z.string()).check(z.maxLength(MAX_INDEX_PROPERTIES)),
		types: z.array(z.string()).check(z.maxLength(MAX_INDEX_PROPERTIES)),
	}),
	templates: z.object({ properties: mapOf(z.string(), MAX_INDEX_PROPERTIES) }),
	status: z.enum(STATUSES),
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

function indexRecord(row: IndexTableRow) {
	const { rows, table_size, rule, properties, templates, status, created_ts, updated_ts } = row;
	return { stats: { rows, table_size }, rule, properties, templates, status, created_ts, updated_ts };
}

// Every route first checks the caller may use the tables so (403102), before the request is
// validated or any table looked up.
const confined = (use: IndexUse) => async (_params: unknown, ctx: SecretContext) => checkIndexAccess(ctx.caller, use);

// A table of the caller's account by name, to read. Another account's table, and a name outside
// the pattern, answer as an absent one: one lookup through (account, name) either way.
async function ownTable(params: { index: string }, ctx: SecretContext): Promise<IndexTableRow> {
	checkIndexAccess(ctx.caller, "read");
	const row = INDEX_NAME.test(params.index)
		? await findIndexTable(dbOf(ctx), ctx.caller.account, params.index)
		: undefined;
	if (!row) throw new ApiError("not_found", { description: "No such index table" });
	return row;
}

const tableParams = z.strictObject({ index: z.string() });

// Said of the Indexes operations in the API document.
const DEFINERS_ONLY =
	"Only a role with neither a twin nor an entry rule may define Indexes tables (403102): a definition decides every reader's rows.";
const READERS =
	"A role with an entry rule may not read Indexes tables (403102): rows come from whole ledgers; a role with a twin rule reads only the rows of twins it sees.";

export const createIndexesTable = defineOperation({
	name: "create_indexes_table",
	summary: "Define Indexes tables: typed rows kept from the account's own ledgers by a rule and templates",
	description: `Defines up to 10 Indexes tables of the caller's account: a rule picks ledgers of its own account, templates fill typed properties. Tables build in the background (status building); a table that cannot be made answers an error in its place. ${DEFINERS_ONLY}`,
	refuses: ["escalation"],
	example: {
		indexes: {
			pumps: {
				rule: "LEDGER.status != null",
				properties: { names: ["state", "rpm"], types: ["text", "integer"] },
				templates: { properties: { state: "{LEDGER[status][state]}", rpm: "{LEDGER[status][rpm]}" } },
			},
		},
	},
	auth: "secret",
	locate: confined("define"),
	body: z.strictObject({
		indexes: z
			.record(z.string().check(z.regex(INDEX_NAME, `Must match ${INDEX_NAME.source}`)), definition)
			.check(
				z.refine(
					(tables) => Object.keys(tables).length >= 1 && Object.keys(tables).length <= MAX_TABLES_PER_CREATE,
					`Must hold 1 to ${MAX_TABLES_PER_CREATE} tables`,
				),
			),
	}),
	status: 201,
	response: z.object({ indexes: mapOf(z.union([indexOut, z.object({ error: z.string() })]), MAX_TABLES_PER_CREATE) }),
	async run({ body }, ctx) {
		return accountClient(ctx, ctx.caller.account).createIndexTables(ctx.caller, body.indexes);
	},
});

export const getIndexesTables = defineOperation({
	name: "get_indexes_tables",
	summary: "The account's Indexes tables, in name order",
	description: `Every Indexes table of the caller's account by name. ${READERS}`,
	refuses: ["escalation"],
	auth: "secret",
	locate: confined("read"),
	response: z.object({ indexes: mapOf(indexOut, MAX_INDEXES_TABLES_CEILING) }),
	async run(_input, ctx) {
		const rows = await listIndexTables(dbOf(ctx), ctx.caller.account);
		return { indexes: Object.fromEntries(rows.map((row) => [row.name, indexRecord(row)])) };
	},
});

export const getIndexesTable = defineOperation({
	name: "get_indexes_table",
	summary: "One Indexes table: its definition, status and row counts",
	description: `One Indexes table of the caller's account: definition, status and row counts. ${READERS}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: tableParams,
	locate: ownTable,
	response: indexOut,
	async run({ located }) {
		return indexRecord(located);
	},
});

export const updateIndexesTable = defineOperation({
	name: "update_indexes_table",
	summary: "Replace parts of an Indexes table's definition; a change rebuilds its rows",
	description: `Replaces the given parts (rule, properties, templates) of an Indexes table's definition; its rows are rebuilt. ${DEFINERS_ONLY}`,
	refuses: ["escalation", "not_found"],
	example: { rule: "LEDGER.status != null and LEDGER.status.rpm > 0" },
	auth: "secret",
	params: tableParams,
	locate: confined("define"),
	body: z
		.partial(z.strictObject(definitionFields))
		.check(
			z.refine(
				(b) => b.rule !== undefined || b.properties !== undefined || b.templates !== undefined,
				"Give rule, properties, templates or several",
			),
		),
	response: indexOut,
	async run({ params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateIndexTable(ctx.caller, params.index, body);
	},
});

export const deleteIndexesTable = defineOperation({
	name: "delete_indexes_table",
	summary: "Delete an Indexes table: its name is free at once, its rows go in the background",
	description: `Deletes an Indexes table: its name is free at once, its rows go in the background. ${DEFINERS_ONLY}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: tableParams,
	locate: confined("define"),
	response: indexOut,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteIndexTable(ctx.caller, params.index);
	},
});

export const truncateIndexesTable = defineOperation({
	name: "truncate_indexes_table",
	summary: "Empty an Indexes table; rows come back as their ledgers change",
	description: `Empties an Indexes table; rows come back as their ledgers change. ${DEFINERS_ONLY}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: tableParams,
	locate: confined("define"),
	response: indexOut,
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).truncateIndexTable(ctx.caller, params.index);
	},
});

// What `match` reads: ROW.<property> and `twin`; every other root is null, the caller's own
// names included (a query is about rows, not about who asks).
function rowScope(twin: string, row: Record<string, Json>, budget: Budget): Scope {
	const none = null as unknown as string;
	return {
		twin: { uuid: twin, owner: none, status: none, description: null },
		user: { account: none, user: none, role: none, description: null },
		now: none as unknown as number,
		budget,
		row,
	};
}

// Who reads a page of rows: the caller, its account's database, and every database by binding,
// where each row's twin is judged. A request reads through its sessions; an export's object
// straight from the bindings.
export type RowReader = {
	caller: Caller;
	env: Env;
	db: Database;
	bindings: string[];
	shard(binding: string): Database;
};

const requestReader = (ctx: SecretContext): RowReader => ({
	caller: ctx.caller,
	env: ctx.env,
	db: dbOf(ctx),
	bindings: ctx.shards.all(),
	shard: (binding) => dbOf({ d1: ctx.shards.of(binding) }),
});

// A page of rows as the caller may see them: all of them without a twin rule; with one, the
// rule decides in D1, in the database of each row's twin, where it can (a row of a hidden twin
// is answered without its properties), and here where it cannot, each row within its share of one work budget (past it the row is
// hidden: a page shows less, never more, and no row's cost moves another's verdict).
export async function visibleRowPage(
	reader: RowReader,
	key: RowKey,
	after: string,
	count: number,
): Promise<{ twin: string; properties: string | null; updated_ts: number }[]> {
	const { caller } = reader;
	const rule = ruleOf(caller.rules.twin);
	if (!rule) return rowPage(reader.db, key, after, count);
	const at = now();
	const verdict = compileRule(rule, { ...scopeOf(caller, at), budget: new Budget(WORK_UNITS) }, TWIN_COLUMNS);
	const page = await rowPage(reader.db, key, after, count);
	// Each twin is judged in its owner's database; every database is asked, with the twins it
	// holds, so what a page costs does not tell where its twins are.
	const held = groupByHome(
		reader.env,
		page.map((row) => row.twin),
	);
	// As many reads in every database as the page's twins would take in one.
	const reads = Math.max(1, Math.ceil(page.length / TWINS_PER_READ));
	const judged = await Promise.all(
		reader.bindings.map((binding) => twinVerdicts(reader.shard(binding), held.get(binding) ?? [], verdict, reads)),
	);
	const verdicts = new Map(judged.flat().map((row) => [row.twin, row]));
	const share = Math.floor(WORK_UNITS / count);
	return page.map((row) => {
		// A twin that is gone is hidden.
		const judgedTwin = verdicts.get(row.twin) ?? { verdict: 0, owner: null, status: null, description: null };
		if (judgedTwin.verdict === 0) return { ...row, properties: null };
		if (judgedTwin.verdict !== null) return row;
		const twin = {
			uuid: row.twin,
			owner: judgedTwin.owner ?? "",
			status: judgedTwin.status ?? "",
			description: JSON.parse(judgedTwin.description ?? "{}") as Json,
		};
		return isVisible(caller, twin, at, new Budget(share, 0)) ? row : { ...row, properties: null };
	});
}

// A row's properties as stored, in the order of the table's names; one it lacks is null.
export function rowProperties(names: string[], stored: string): Record<string, Json> {
	const values = JSON.parse(stored) as Record<string, Json>;
	return Object.fromEntries(names.map((name) => [name, values[name] ?? null]));
}

// Property values are typed scalars (or null) once coerced.
const propertyValue = z.union([z.string(), z.number(), z.boolean(), z.null()]);
const rowOut = z.object({
	twin: uuidOut,
	properties: mapOf(propertyValue, MAX_INDEX_PROPERTIES),
	updated_ts: timestampOut,
});

export const queryIndexesTable = defineOperation({
	name: "query_indexes_table",
	summary: "A page of an Indexes table's rows in twin order, those that pass match",
	description: `A page of an Indexes table's rows in twin order, examining count rows and answering those that pass match (a rule over ROW); paged by cursor. ${READERS}`,
	refuses: ["escalation", "not_found", "invalid_cursor"],
	auth: "secret",
	params: tableParams,
	locate: ownTable,
	query: z.strictObject({
		match: z.optional(ruleText),
		cursor: z.optional(cursorIn),
		count: z._default(z.optional(pageLimit(1000)), 100),
	}),
	response: z.object({ cursor: cursorOut, rows: z.array(rowOut).check(z.maxLength(1000)) }),
	async run({ located: table, query }, ctx) {
		const match = query.match === undefined ? null : ruleOf(query.match);
		// The cursor holds for this table's generation and this match only; a caller with a twin
		// rule's, whose position may be a twin it does not see, for that caller only.
		const reader = ctx.caller.rules.twin === null ? "" : `/${ctx.caller.user}`;
		const scope = `query_indexes_table/${table.uuid}/${table.generation}/${await sha256Hex(query.match ?? "")}${reader}`;
		const after = (await openCursor(ctx.env, scope, query.cursor, z.tuple([z.string()])))?.[0] ?? "";
		const key = { table: table.uuid, generation: table.generation };
		const rows = await visibleRowPage(requestReader(ctx), key, after, query.count);
		const budget = new Budget(WORK_UNITS);
		const names = table.properties.names;
		const answer: { twin: string; properties: Record<string, Json>; updated_ts: number }[] = [];
		let bytes = 0;
		let examined = 0;
		for (const row of rows) {
			if (examined > 0 && budget.exhausted) break;
			// A hidden row moves the page on and nothing more: match never runs on it.
			if (row.properties === null) {
				examined++;
				continue;
			}
			const properties = rowProperties(names, row.properties);
			let passes = true;
			if (match) {
				try {
					passes = evaluate(match, rowScope(row.twin, properties, budget));
				} catch (error) {
					if (!(error instanceof BudgetExceeded)) throw error;
					if (examined === 0) throw overBudget("match", error, " on one row");
					break;
				}
			}
			if (passes) {
				const out = { twin: row.twin, properties, updated_ts: row.updated_ts };
				bytes += utf8Bytes(JSON.stringify(out)) + 1;
				if (examined > 0 && bytes > MAX_PAGE_BYTES) break;
				answer.push(out);
			}
			examined++;
		}
		const done = rows.length < query.count && examined === rows.length;
		const last = rows[examined - 1]?.twin;
		return { cursor: done || !last ? null : await sealCursor(ctx.env, scope, [last]), rows: answer };
	},
});

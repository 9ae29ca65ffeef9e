import type { BatchItem } from "drizzle-orm/batch";
import { sibling } from "../base/shards";
import { type Database, database } from "../db/client";
import { groupByHome, shardDatabase } from "../db/shards";
import * as db_ from "../db/indexes";
import type { IndexDefinition, IndexTableRow } from "../db/indexes";
import { runBatch } from "../db/ledgers";
import { now } from "../base/time";
import { Catalog } from "./catalog";
import { type Host, TIMER } from "./host";
import { ApiError } from "../base/errors";
import { utf8Bytes } from "../base/json";
import type { Caller } from "../base/caller";
import type { Json, Rule } from "../rules/ast";
import { evaluate, type Scope } from "../rules/evaluate";
import { checkDefinition } from "../rules/index-definition";
import { JsonTexts } from "../rules/bounded-json";
import { type Canonical, canonicalType, coerce, MAX_STRING_VALUE } from "../rules/index-values";
import { ruleOf } from "../rules/stored";
import { Budget, withinBudget } from "../rules/strings";
import { parseTemplate, renderTemplate, type Template } from "../rules/templates";

// An account's Indexes tables (docs/indexes.md): definitions, the rows its own ledgers give them,
// and the builds that fill a new generation. The account's object runs all of it one step at a
// time with the ledger writes, so a row is written in the same batch as the ledger it comes from.

export type IndexLimits = { tables: number; rows: number };

// What one table's rule may spend on one ledger; past it the ledger has no row there, so a
// ledger write never fails because of an index.
export const INDEX_RULE_WORK_UNITS = 100_000;
// A build step takes at most this many ledgers, or this many bytes of entries, or the ledgers
// whose rows spend this much work (at least one ledger): what the ten tables of one ledger
// write may spend.
export const BUILD_LEDGERS = 200;
export const BUILD_BYTES = 2 * 1024 * 1024;
export const BUILD_WORK_UNITS = 10 * INDEX_RULE_WORK_UNITS;

type Table = { row: IndexTableRow; rule: Rule | null; templates: Template[]; types: Canonical[] };

function compiled(row: IndexTableRow): Table {
	const templates = row.properties.names.map((name) => {
		const parsed = parseTemplate(row.templates.properties[name] ?? "");
		// A stored template was checked when written; one that no longer parses yields nulls.
		return parsed.ok ? parsed.template : { parts: [{ kind: "entry" as const, entry: "", path: [] }] };
	});
	const types = row.properties.types.map((type) => {
		const canonical = canonicalType(type);
		return canonical === undefined || canonical === "unsupported" ? "string" : canonical;
	});
	return { row, rule: ruleOf(row.rule), templates, types };
}

// The account's tables as D1 holds them, rules and templates parsed (catalog.ts).
export class IndexCatalog extends Catalog<IndexTableRow, Table> {
	constructor(load: () => Database) {
		super((account) => db_.listIndexTables(load(), account), compiled);
	}
}

export function indexRecord(row: IndexTableRow) {
	return {
		stats: { rows: row.rows, table_size: row.table_size },
		rule: row.rule,
		properties: row.properties,
		templates: row.templates,
		status: row.status,
		created_ts: row.created_ts,
		updated_ts: row.updated_ts,
	};
}

export type LedgerInput = { account: string; twin: string; owner: string; values: Record<string, Json> };

// The row a ledger gives a table: its properties as compact JSON in the names' order, or null
// when the ledger has no entry or fails the rule; and the work units it spent. The rule, every
// template and every coercion share the table's INDEX_RULE_WORK_UNITS for the ledger: past
// them the ledger has no row there (docs/indexes.md). `texts` shares the JSON of the ledger's
// values among its tables.
export function rowOf(
	table: Table,
	input: LedgerInput,
	texts = new JsonTexts(MAX_STRING_VALUE),
): { text: string | null; units: number } {
	if (Object.keys(input.values).length === 0 || table.rule === null) return { text: null, units: 0 };
	// No overrun (fixed, found by test/indexes/rows.test.ts): a Budget lets one evaluation
	// spend up to twice its units before it throws, so a rule needing up to 200,000 units kept
	// its row, where the contract allows a table 100,000 per ledger.
	const budget = new Budget(INDEX_RULE_WORK_UNITS, 0);
	const scope: Scope = {
		twin: { uuid: input.twin, owner: input.owner, status: "", description: null },
		user: { account: input.account, user: "", role: "", description: null },
		now: 0,
		budget,
		entry: {
			ledger: input.account,
			name: "",
			value: null,
			created_ts: null,
			updated_ts: null,
			value_changed_ts: null,
			values: input.values,
		},
	};
	const rule = table.rule;
	const fields = { entries: input.values, twin: input.twin, ledger: input.account, owner: input.owner };
	const text = withinBudget(() => {
		if (!evaluate(rule, scope)) return null;
		const properties: Record<string, Json> = {};
		table.row.properties.names.forEach((name, i) => {
			properties[name] = coerce(renderTemplate(table.templates[i], fields, budget, texts), table.types[i], budget);
		});
		return JSON.stringify(properties);
	}, null);
	return { text, units: INDEX_RULE_WORK_UNITS - budget.remaining };
}

type Existing = { properties: string; size: number } | undefined;

// The statements that bring one twin's row of one table to what its ledger gives, and the
// change to the table's counts they make.
function rowChange(
	db: Database,
	table: Table,
	twin: string,
	text: string | null,
	existing: Existing,
	at: number,
	limits: IndexLimits,
) {
	const { uuid: id, generation, status } = table.row;
	const key = { table: id, generation };
	const statements: BatchItem<"sqlite">[] = [];
	const delta = { rows: 0, bytes: 0, status };
	if (text === null) {
		if (!existing) return { statements, delta };
		statements.push(db_.deleteRow(db, key, twin));
		delta.rows = -1;
		delta.bytes = -existing.size;
	} else if (existing && existing.properties === text) {
		return { statements, delta };
	} else if (!existing && (status === "full" || table.row.rows >= limits.rows)) {
		// Full: a row that would be added is not, until a truncate or a rebuild (also once rows
		// have gone below the limit again: the status says the table is incomplete).
		delta.status = "full";
	} else {
		const size = utf8Bytes(text);
		statements.push(db_.upsertRow(db, { table: id, generation, twin, properties: text, size, updated_ts: at }));
		delta.rows = existing ? 0 : 1;
		delta.bytes = size - (existing?.size ?? 0);
	}
	if (delta.rows || delta.bytes || delta.status !== status)
		statements.push(db_.countRows(db, id, generation, delta.rows, delta.bytes, delta.status));
	return { statements, delta };
}

function applied(
	row: IndexTableRow,
	delta: { rows: number; bytes: number; status: IndexTableRow["status"] },
): IndexTableRow {
	return { ...row, rows: row.rows + delta.rows, table_size: row.table_size + delta.bytes, status: delta.status };
}

// A ledger write's part: every table of the writing account re-evaluated on the ledger as
// written. The statements join the write's batch; `committed` runs once it has landed.
//
// Rows come from the whole ledger, entries the writer may not see included. So for a writer
// whose role has an entry rule, `db` is a database the request's meter does not see: what the
// rows cost (a row read, written or not) would tell it what its hidden entries hold. The
// statements still join the write's batch and commit with it.
export async function indexChanges(
	db: Database,
	catalog: IndexCatalog,
	ledger: LedgerInput,
	at: number,
	limits: IndexLimits,
) {
	const tables = await catalog.all(ledger.account);
	if (tables.length === 0) return { statements: [], committed: () => undefined };
	const keys = tables.map((table) => ({ table: table.row.uuid, generation: table.row.generation }));
	const existing = new Map((await db_.rowsOfTwin(db, ledger.twin, keys)).map((row) => [row.table, row]));
	const statements: BatchItem<"sqlite">[] = [];
	const after: IndexTableRow[] = [];
	const texts = new JsonTexts(MAX_STRING_VALUE);
	for (const table of tables) {
		const change = rowChange(
			db,
			table,
			ledger.twin,
			rowOf(table, ledger, texts).text,
			existing.get(table.row.uuid),
			at,
			limits,
		);
		statements.push(...change.statements);
		if (change.statements.length) after.push(applied(table.row, change.delta));
	}
	return {
		statements,
		committed: () => {
			for (const row of after) catalog.put(row);
		},
	};
}

// One step of a table's build: the next ledgers after `after` in twin order, their rows in one
// batch. Answers where the next step starts, or null when the walk is done (the table is then
// `ready`, or stays `full`). A step reads at most BUILD_LEDGERS ledgers or BUILD_BYTES of
// entries, and stops after the ledger whose rows take its work past BUILD_WORK_UNITS, so that
// it costs what one ledger write may cost; the next step starts after the last ledger done.
export async function buildStep(
	db: Database,
	catalog: IndexCatalog,
	account: string,
	uuid: string,
	after: string,
	at: number,
	limits: IndexLimits,
	env: Env,
): Promise<string | null> {
	const table = (await catalog.all(account)).find((t) => t.row.uuid === uuid);
	if (!table) return null;
	const ledgers = await db_.ledgersAfter(db, account, after, BUILD_LEDGERS);
	let bytes = 0;
	const twins: string[] = [];
	for (const ledger of ledgers) {
		if (twins.length && bytes + ledger.bytes > BUILD_BYTES) break;
		bytes += ledger.bytes;
		twins.push(ledger.twin);
	}
	if (twins.length === 0) {
		if (table.row.status === "building") {
			const row = await db_.setIndexTable(db, uuid, { status: "ready" });
			if (row) catalog.put(row);
		}
		return null;
	}
	const owners = await twinOwners(env, twins);
	const values = new Map<string, { owner: string; values: Record<string, Json> }>();
	for (const entry of await db_.entriesOf(db, account, twins)) {
		const ledger = values.get(entry.twin) ?? { owner: owners.get(entry.twin) ?? "", values: {} };
		ledger.values[entry.name] = JSON.parse(entry.value) as Json;
		values.set(entry.twin, ledger);
	}
	const key = { table: uuid, generation: table.row.generation };
	const existing = new Map((await db_.rowsOfTwins(db, key, twins)).map((row) => [row.twin, row]));
	const statements: BatchItem<"sqlite">[] = [];
	let row = table.row;
	let units = 0;
	let last = twins[0];
	for (const twin of twins) {
		if (units >= BUILD_WORK_UNITS) break;
		last = twin;
		const ledger = values.get(twin);
		if (!ledger) continue;
		const computed = rowOf({ ...table, row }, { account, twin, owner: ledger.owner, values: ledger.values });
		units += computed.units;
		const change = rowChange(db, { ...table, row }, twin, computed.text, existing.get(twin), at, limits);
		statements.push(...change.statements);
		row = applied(row, change.delta);
	}
	try {
		await runBatch(db, statements);
	} catch (error) {
		catalog.forget();
		throw error;
	}
	catalog.put(row);
	return last;
}

// Definitions. Each is a write of the account's object; the new generation's rows come from
// builds the object's alarm runs (see AccountDO).

export async function createTables(
	db: Database,
	catalog: IndexCatalog,
	caller: Caller,
	input: Record<string, IndexDefinition>,
	limits: IndexLimits,
	at: number,
) {
	const tables = await catalog.all(caller.account);
	const names = new Set(tables.map((table) => table.row.name));
	const ledgers = await db_.hasLedgers(db, caller.account);
	const answers: Record<string, ReturnType<typeof indexRecord> | { error: string }> = {};
	const created: IndexTableRow[] = [];
	for (const [name, definition] of Object.entries(input)) {
		if (names.has(name)) {
			answers[name] = { error: "Table already exists." };
			continue;
		}
		if (tables.length + created.length >= limits.tables) {
			answers[name] = { error: "Table limit reached." };
			continue;
		}
		const row: IndexTableRow = {
			uuid: sibling(caller.account),
			account: caller.account,
			name,
			...definition,
			generation: 1,
			status: ledgers ? "building" : "ready",
			rows: 0,
			table_size: 0,
			created_ts: at,
			updated_ts: at,
		};
		created.push(row);
		names.add(name);
		answers[name] = indexRecord(row);
	}
	await runBatch(
		db,
		created.map((row) => db_.insertIndexTable(db, row)),
	);
	for (const row of created) catalog.put(row);
	return {
		uuid: caller.account,
		indexes: answers,
		builds: ledgers ? created.map((row) => ({ uuid: row.uuid, generation: row.generation })) : [],
	};
}

async function ownTable(db: Database, caller: Caller, name: string): Promise<IndexTableRow> {
	const row = await db_.findIndexTable(db, caller.account, name);
	if (!row) throw new ApiError("not_found", { description: "No such index table" });
	return row;
}

// A given field replaces the stored one whole; the result must hold as a definition. The same
// definition changes nothing; another starts a new generation, built from the ledgers.
export async function updateTable(
	db: Database,
	catalog: IndexCatalog,
	caller: Caller,
	name: string,
	changes: Partial<IndexDefinition>,
	at: number,
) {
	const row = await ownTable(db, caller, name);
	const merged: IndexDefinition = {
		rule: changes.rule ?? row.rule,
		properties: changes.properties ?? row.properties,
		templates: changes.templates ?? row.templates,
	};
	const details = checkDefinition(merged);
	if (details.length)
		throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
	const same = definitionKey(merged) === definitionKey(row);
	if (same) return { uuid: row.uuid, ...indexRecord(row), builds: [], drop: undefined };
	return restart(db, catalog, caller.account, row, { ...merged, updated_ts: at }, true);
}

// What a definition means, whatever order its keys were sent in.
function definitionKey(definition: IndexDefinition): string {
	const { names, types } = definition.properties;
	return JSON.stringify([
		definition.rule,
		names,
		types,
		names.map((name) => definition.templates.properties[name] ?? null),
	]);
}

// A new, empty generation: the old rows are invisible at once and deleted in the background.
async function restart(
	db: Database,
	catalog: IndexCatalog,
	account: string,
	row: IndexTableRow,
	changes: Partial<IndexTableRow>,
	build: boolean,
) {
	const ledgers = build && (await db_.hasLedgers(db, account));
	const updated = await db_.setIndexTable(db, row.uuid, {
		...changes,
		generation: row.generation + 1,
		status: ledgers ? "building" : "ready",
		rows: 0,
		table_size: 0,
	});
	if (!updated) throw new ApiError("not_found", { description: "No such index table" });
	catalog.put(updated);
	const builds = ledgers ? [{ uuid: row.uuid, generation: updated.generation }] : [];
	return { uuid: row.uuid, ...indexRecord(updated), builds, drop: { uuid: row.uuid, below: updated.generation } };
}

export async function truncateTable(db: Database, catalog: IndexCatalog, caller: Caller, name: string, at: number) {
	const row = await ownTable(db, caller, name);
	return restart(db, catalog, caller.account, row, { updated_ts: at }, false);
}

export async function deleteTable(db: Database, catalog: IndexCatalog, caller: Caller, name: string) {
	const row = await ownTable(db, caller, name);
	await db_.removeIndexTable(db, row.uuid);
	catalog.remove(row.uuid);
	return { uuid: row.uuid, ...indexRecord(row), drop: { uuid: row.uuid, below: row.generation + 1 } };
}

export function dropRows(db: Database, uuid: string, below: number, limit: number) {
	return db_.dropOldRows(db, uuid, below, limit);
}

// Index work left for the indexes timer, in the object's storage: builds by table (the
// generation and the last twin walked), and generations of rows to delete (all of a deleted
// table's).
const INDEX_BUILDS = "index-builds";
const INDEX_DROPS = "index-drops";
type Builds = Record<string, { generation: number; after: string }>;
type Drops = { uuid: string; below: number }[];
// Old rows deleted per step.
const DROP_ROWS = 1000;

// Beside a table write: new builds start from the first twin; `stop` ends a table's build
// (truncate, delete); the timer is due at once.
export async function queueIndexWork(
	host: Host,
	account: string,
	builds: { uuid: string; generation: number }[],
	drop: { uuid: string; below: number } | undefined,
	stop?: string,
) {
	const pending = (await host.storage.get<Builds>(INDEX_BUILDS)) ?? {};
	if (stop) delete pending[stop];
	for (const build of builds) pending[build.uuid] = { generation: build.generation, after: "" };
	await host.storage.put(INDEX_BUILDS, pending);
	if (drop) await host.storage.put(INDEX_DROPS, [...((await host.storage.get<Drops>(INDEX_DROPS)) ?? []), drop]);
	if (builds.length || drop) await host.timers.by(TIMER.indexes, account, now());
}

// The indexes timer's step, queued between writes like a write: a step of one build, and a
// round of old rows deleted. Due again at once while work is left.
export async function indexStep(
	host: Host,
	catalog: IndexCatalog,
	account: string,
	limits: IndexLimits,
): Promise<number | undefined> {
	const outcome = await host.serialized(async (db) => {
		const builds = (await host.storage.get<Builds>(INDEX_BUILDS)) ?? {};
		const [uuid, build] = Object.entries(builds)[0] ?? [];
		if (uuid && build) {
			const next = await buildStep(db, catalog, account, uuid, build.after, now(), limits, host.env);
			if (next === null) delete builds[uuid];
			else builds[uuid] = { ...build, after: next };
			await host.storage.put(INDEX_BUILDS, builds);
		}
		const drops = (await host.storage.get<Drops>(INDEX_DROPS)) ?? [];
		if (drops.length) {
			const deleted = await dropRows(db, drops[0]!.uuid, drops[0]!.below, DROP_ROWS);
			if (deleted < DROP_ROWS) await host.storage.put(INDEX_DROPS, drops.slice(1));
		}
		return Object.keys(builds).length > 0 || ((await host.storage.get<Drops>(INDEX_DROPS)) ?? []).length > 0;
	});
	return !outcome.ok || outcome.value ? now() : undefined;
}

// The owners of twins, each read in the database holding the twin (its owner's: docs/scaling.md).
async function twinOwners(env: Env, twins: string[]): Promise<Map<string, string>> {
	const found = await Promise.all(
		[...groupByHome(env, twins)].map(([binding, uuids]) => db_.ownersOf(database(shardDatabase(env, binding)), uuids)),
	);
	return new Map(found.flat().map((row) => [row.uuid, row.owner]));
}

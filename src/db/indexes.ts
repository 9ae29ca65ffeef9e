import { and, asc, eq, gt, or, sql } from "drizzle-orm";
import type { Database } from "./client";
import { type IndexDefinition, indexRows, indexTables, ledgerEntries } from "./schema";

// Indexes tables and their rows (docs/indexes.md "How rows are kept"). Definitions, rows and their counts are written
// by the account's object only; the Worker reads definitions and pages of rows.

export type IndexTableRow = typeof indexTables.$inferSelect;
export type IndexRowRow = typeof indexRows.$inferSelect;
export type { IndexDefinition };

// A table of the account by name: one lookup through (account, name), whether the name is
// another account's or nobody's.
export function findIndexTable(db: Database, account: string, name: string) {
	return db
		.select()
		.from(indexTables)
		.where(and(eq(indexTables.account, account), eq(indexTables.name, name)))
		.get();
}

// An account's tables, in name order: at most MAX_INDEXES_TABLES.
export function listIndexTables(db: Database, account: string) {
	return db.select().from(indexTables).where(eq(indexTables.account, account)).orderBy(asc(indexTables.name));
}

export function insertIndexTable(db: Database, row: IndexTableRow) {
	return db.insert(indexTables).values(row);
}

export function removeIndexTable(db: Database, uuid: string) {
	return db.delete(indexTables).where(eq(indexTables.uuid, uuid));
}

// A new definition, generation or status; the counts start again when the generation does.
export function setIndexTable(db: Database, uuid: string, changes: Partial<IndexTableRow>) {
	return db.update(indexTables).set(changes).where(eq(indexTables.uuid, uuid)).returning().get();
}

// Adds to the counts of the table's current generation (and sets its status), in the batch
// that changes its rows.
export function countRows(
	db: Database,
	uuid: string,
	generation: number,
	rows: number,
	bytes: number,
	status?: IndexTableRow["status"],
) {
	return db
		.update(indexTables)
		.set({
			rows: sql`${indexTables.rows} + ${rows}`,
			table_size: sql`${indexTables.table_size} + ${bytes}`,
			...(status && { status }),
		})
		.where(and(eq(indexTables.uuid, uuid), eq(indexTables.generation, generation)));
}

export type RowKey = { table: string; generation: number };

// The rows one twin has in these tables' generations: each through the primary key.
export function rowsOfTwin(db: Database, twin: string, keys: RowKey[]) {
	if (keys.length === 0) return Promise.resolve([]);
	return db
		.select({ table: indexRows.table, properties: indexRows.properties, size: indexRows.size })
		.from(indexRows)
		.where(
			or(
				...keys.map((key) =>
					and(eq(indexRows.table, key.table), eq(indexRows.generation, key.generation), eq(indexRows.twin, twin)),
				),
			),
		);
}

// The rows some twins have in one generation (a build step's twins).
export function rowsOfTwins(db: Database, key: RowKey, twins: string[]) {
	return db
		.select({ twin: indexRows.twin, properties: indexRows.properties, size: indexRows.size })
		.from(indexRows)
		.where(
			and(
				eq(indexRows.table, key.table),
				eq(indexRows.generation, key.generation),
				sql`${indexRows.twin} IN (SELECT value FROM json_each(${JSON.stringify(twins)}))`,
			),
		);
}

export function upsertRow(db: Database, row: IndexRowRow) {
	return db
		.insert(indexRows)
		.values(row)
		.onConflictDoUpdate({
			target: [indexRows.table, indexRows.generation, indexRows.twin],
			set: { properties: row.properties, size: row.size, updated_ts: row.updated_ts },
		});
}

export function deleteRow(db: Database, key: RowKey, twin: string) {
	return db
		.delete(indexRows)
		.where(and(eq(indexRows.table, key.table), eq(indexRows.generation, key.generation), eq(indexRows.twin, twin)));
}

// Deletes up to `limit` rows of the table's generations below `below` (all of a deleted
// table's); answers how many went, so the caller knows whether any are left.
export async function dropOldRows(db: Database, table: string, below: number, limit: number): Promise<number> {
	const result = await db.run(sql`DELETE FROM ${indexRows} WHERE rowid IN (
		SELECT rowid FROM ${indexRows} WHERE ${indexRows.table} = ${table} AND ${indexRows.generation} < ${below} LIMIT ${limit})`);
	return result.meta.changes ?? 0;
}

// A page of a table's rows in twin order after `after`: the query's walk through the key.
export function rowPage(db: Database, key: RowKey, after: string, count: number) {
	return db
		.select({ twin: indexRows.twin, properties: indexRows.properties, updated_ts: indexRows.updated_ts })
		.from(indexRows)
		.where(and(eq(indexRows.table, key.table), eq(indexRows.generation, key.generation), gt(indexRows.twin, after)))
		.orderBy(asc(indexRows.twin))
		.limit(count);
}

// Each twin of a page judged by `verdict`: a twin rule compiled to SQL over the twin's columns
// (1, 0 or NULL, rules/compile.ts), read by the twin's primary key in the database holding it
// (its owner's: docs/scaling.md). The twin's columns come back only where SQL could not decide
// (NULL) and the Worker must. The uuids are bound values, TWINS_PER_READ to a statement (D1
// binds at most 100), so that only the twins found count as rows read; every database gets
// `reads` statements, whatever it holds (one with no twin looks for none), so that what a page
// costs does not tell where its twins are.
export type TwinVerdict = {
	twin: string;
	verdict: number | null;
	owner: string | null;
	status: string | null;
	description: string | null;
};

export const TWINS_PER_READ = 90;

export async function twinVerdicts(db: Database, uuids: string[], verdict: string, reads: number) {
	const judged = await Promise.all(
		Array.from({ length: reads }, (_, i) => {
			const part = uuids.slice(i * TWINS_PER_READ, (i + 1) * TWINS_PER_READ);
			const list = sql.join(
				(part.length ? part : [""]).map((uuid) => sql`${uuid}`),
				sql`, `,
			);
			// The verdict reads the twin's columns unqualified (uuid, owner, status, description).
			const read = sql`SELECT uuid AS twin, owner, status, description, (${sql.raw(verdict)}) AS verdict
				FROM twins WHERE uuid IN (${list})`;
			return db.all<TwinVerdict>(sql`SELECT twin, verdict,
				CASE WHEN verdict IS NULL THEN owner END AS owner, CASE WHEN verdict IS NULL THEN status END AS status,
				CASE WHEN verdict IS NULL THEN description END AS description
				FROM (${read})`);
		}),
	);
	return judged.flat();
}

// The next ledgers of an account after `after`, in twin order, with their sizes: what a build
// step may take.
export function ledgersAfter(db: Database, account: string, after: string, limit: number) {
	return db
		.select({ twin: ledgerEntries.twin, bytes: sql<number>`sum(${ledgerEntries.size})` })
		.from(ledgerEntries)
		.where(and(eq(ledgerEntries.account, account), gt(ledgerEntries.twin, after)))
		.groupBy(ledgerEntries.twin)
		.orderBy(asc(ledgerEntries.twin))
		.limit(limit);
}

// The entries of those ledgers.
export function entriesOf(db: Database, account: string, twins: string[]) {
	return db.all<{ twin: string; name: string; value: string }>(sql`
		SELECT e.twin, e.name, e.value FROM ${ledgerEntries} e
		WHERE e.account = ${account} AND e.twin IN (SELECT value FROM json_each(${JSON.stringify(twins)}))`);
}

// The owners of twins held in one database.
export function ownersOf(db: Database, uuids: string[]) {
	return db.all<{ uuid: string; owner: string }>(sql`
		SELECT uuid, owner FROM twins WHERE uuid IN (SELECT value FROM json_each(${JSON.stringify(uuids)}))`);
}

export async function hasLedgers(db: Database, account: string): Promise<boolean> {
	const [row] = await db
		.select({ twin: ledgerEntries.twin })
		.from(ledgerEntries)
		.where(eq(ledgerEntries.account, account))
		.limit(1);
	return row !== undefined;
}

import { and, asc, eq, gte, lte, ne, or, sql } from "drizzle-orm";
import type { Database } from "./client";
import { type TimeseriesDefinition, timeseriesChunks, timeseriesOutbox, timeseriesTables } from "./schema";

// Timeseries tables (docs/timeseries.md): definitions, the outbox of points on their way to their
// chunk objects, and the list of chunks holding points. Only the account's object writes them;
// the Worker reads definitions and the chunks a query's range meets.

export type TimeseriesTableRow = typeof timeseriesTables.$inferSelect;
export type TimeseriesOutboxRow = typeof timeseriesOutbox.$inferSelect;
export type TimeseriesOutboxInsert = typeof timeseriesOutbox.$inferInsert;
export type { TimeseriesDefinition };

// A table of the account by name: one lookup through (account, name), whether the name is
// another account's or nobody's.
export function findTimeseriesTable(db: Database, account: string, name: string) {
	return db
		.select()
		.from(timeseriesTables)
		.where(and(eq(timeseriesTables.account, account), eq(timeseriesTables.name, name)))
		.get();
}

// A table by its uuid: a chunk object reads its definition again each day.
export function timeseriesTableById(db: Database, uuid: string) {
	return db.select().from(timeseriesTables).where(eq(timeseriesTables.uuid, uuid)).get();
}

// An account's tables, in name order: at most MAX_TIMESERIES_TABLES.
export function listTimeseriesTables(db: Database, account: string) {
	return db
		.select()
		.from(timeseriesTables)
		.where(eq(timeseriesTables.account, account))
		.orderBy(asc(timeseriesTables.name));
}

export function insertTimeseriesTable(db: Database, row: TimeseriesTableRow) {
	return db.insert(timeseriesTables).values(row);
}

export function removeTimeseriesTable(db: Database, uuid: string) {
	return db.delete(timeseriesTables).where(eq(timeseriesTables.uuid, uuid));
}

export function setTimeseriesTable(db: Database, uuid: string, changes: Partial<TimeseriesTableRow>) {
	return db.update(timeseriesTables).set(changes).where(eq(timeseriesTables.uuid, uuid));
}

// Adds to the counts of the table's current generation, in the batch that commits the points
// (or, negative, once points expire or a full chunk refuses them).
export function countPoints(db: Database, uuid: string, generation: number, rows: number, bytes: number) {
	return db
		.update(timeseriesTables)
		.set({
			rows: sql`max(0, ${timeseriesTables.rows} + ${rows})`,
			table_size: sql`max(0, ${timeseriesTables.table_size} + ${bytes})`,
		})
		.where(and(eq(timeseriesTables.uuid, uuid), eq(timeseriesTables.generation, generation)));
}

// A full chunk refused points: the table says so until a truncate.
export function markFull(db: Database, uuid: string, generation: number) {
	return db
		.update(timeseriesTables)
		.set({ status: "full" })
		.where(and(eq(timeseriesTables.uuid, uuid), eq(timeseriesTables.generation, generation)));
}

// A write's outbox rows in one statement, whatever their number (one bound value: D1 binds at
// most 100).
export function insertOutbox(db: Database, rows: TimeseriesOutboxInsert[]) {
	return db.insert(timeseriesOutbox).select(
		sql`SELECT NULL, json_extract(value, '$.account'), json_extract(value, '$.table'), json_extract(value, '$.generation'),
			json_extract(value, '$.seq'), json_extract(value, '$.entry'), json_extract(value, '$.twin'), json_extract(value, '$.ts'),
			json_extract(value, '$.dims'), json_extract(value, '$.measurement'), json_extract(value, '$.value'),
			json_extract(value, '$.bytes'), json_extract(value, '$.dropped'), json_extract(value, '$.at')
			FROM json_each(${JSON.stringify(rows)})`,
	);
}

// The account's oldest outbox rows.
export function outboxPage(db: Database, account: string, limit: number) {
	return db
		.select()
		.from(timeseriesOutbox)
		.where(eq(timeseriesOutbox.account, account))
		.orderBy(asc(timeseriesOutbox.id))
		.limit(limit);
}

export function deleteOutbox(db: Database, account: string, ids: number[]) {
	return db
		.delete(timeseriesOutbox)
		.where(
			and(
				eq(timeseriesOutbox.account, account),
				sql`${timeseriesOutbox.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`,
			),
		);
}

// The chunks that hold points, listed once (a later write of the same chunk changes nothing), in
// one statement. `WHERE true`: SQLite reads an upsert's ON CONFLICT after a bare SELECT as part
// of a join.
export function noteChunks(
	db: Database,
	account: string,
	chunks: { table: string; generation: number; start: number }[],
) {
	const list = JSON.stringify(chunks.map((c) => [c.table, c.generation, c.start]));
	return db
		.insert(timeseriesChunks)
		.select(
			sql`SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), ${account}
				FROM json_each(${list}) WHERE true`,
		)
		.onConflictDoNothing();
}

// The chunks of a generation whose range meets [from, to], in start order: at most `limit`.
export function chunksBetween(
	db: Database,
	key: { table: string; generation: number },
	from: number,
	to: number,
	desc: boolean,
	limit: number,
) {
	const c = timeseriesChunks;
	return db
		.select({ start: c.start })
		.from(c)
		.where(and(eq(c.table, key.table), eq(c.generation, key.generation), gte(c.start, from), lte(c.start, to)))
		.orderBy(desc ? sql`${c.start} DESC` : asc(c.start))
		.limit(limit);
}

// Chunks of the account that belong to no current table generation (a deleted table's, or one
// before a truncate): their objects are emptied, then their rows go.
export function staleChunks(db: Database, account: string, limit: number) {
	const c = timeseriesChunks;
	const t = timeseriesTables;
	return db
		.select({ table: c.table, generation: c.generation, start: c.start })
		.from(c)
		.leftJoin(t, eq(t.uuid, c.table))
		.where(and(eq(c.account, account), or(sql`${t.uuid} IS NULL`, ne(t.generation, c.generation))))
		.limit(limit);
}

export function forgetChunks(db: Database, chunks: { table: string; generation: number; start: number }[]) {
	const c = timeseriesChunks;
	return db
		.delete(c)
		.where(
			sql`(${c.table}, ${c.generation}, ${c.start}) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]') FROM json_each(${JSON.stringify(chunks.map((k) => [k.table, k.generation, k.start]))}))`,
		);
}

import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { ledgerEntries, ledgerHistory } from "./schema";

export type EntryRow = typeof ledgerEntries.$inferSelect;

export const MAX_HISTORY_RECORDS = 1000;

// The whole ledger of one account on one twin, one row_read per entry. A ledger is at most
// 64 KiB, so this read is bounded, and reading it whole makes what a request costs
// independent of which names it asks for.
export function readLedger(db: Database, twin: string, account: string): Promise<EntryRow[]> {
	return db
		.select()
		.from(ledgerEntries)
		.where(and(eq(ledgerEntries.twin, twin), eq(ledgerEntries.account, account)))
		.orderBy(ledgerEntries.name);
}

export type HistoryRow = { name: string; ts: number; value: string };

// The newest `limit` records per entry within [ge, le], in one query for up to 100 names.
export async function readHistory(
	db: Database,
	twin: string,
	account: string,
	names: string[],
	range: { ge: number; le: number; limit: number },
): Promise<HistoryRow[]> {
	if (names.length === 0) return [];
	return (await db.all(sql`
		SELECT name, ts, value FROM (
			SELECT name, ts, value, row_number() OVER (PARTITION BY name ORDER BY ts DESC) AS position
			FROM ledger_history
			WHERE twin = ${twin} AND account = ${account} AND name IN (SELECT value FROM json_each(${JSON.stringify(names)}))
				AND ts >= ${range.ge} AND ts <= ${range.le}
		)
		WHERE position <= ${range.limit}
		ORDER BY name, ts DESC`)) as HistoryRow[];
}

type Key = { twin: string; account: string; name: string };

export function upsertEntry(db: Database, row: EntryRow) {
	const { twin, account, name, ...changes } = row;
	return db
		.insert(ledgerEntries)
		.values(row)
		.onConflictDoUpdate({ target: [ledgerEntries.twin, ledgerEntries.account, ledgerEntries.name], set: changes });
}

// Entries and their history, by name: one statement each, however many names.
export function deleteEntries(db: Database, twin: string, account: string, names: string[]) {
	const named = (name: typeof ledgerEntries.name | typeof ledgerHistory.name) => sql`${name} IN (SELECT value FROM json_each(${JSON.stringify(names)}))`;
	return [
		db.delete(ledgerEntries).where(and(eq(ledgerEntries.twin, twin), eq(ledgerEntries.account, account), named(ledgerEntries.name))),
		db.delete(ledgerHistory).where(and(eq(ledgerHistory.twin, twin), eq(ledgerHistory.account, account), named(ledgerHistory.name))),
	] as const;
}

export function appendHistory(db: Database, key: Key, ts: number, value: string) {
	return db
		.insert(ledgerHistory)
		.values({ ...key, ts, value })
		.onConflictDoUpdate({ target: [ledgerHistory.twin, ledgerHistory.account, ledgerHistory.name, ledgerHistory.ts], set: { value } });
}

export function dropHistory(db: Database, key: Key) {
	return db.delete(ledgerHistory).where(historyOf(key));
}

// Keeps the records newer than `cutoff` and at most the newest MAX_HISTORY_RECORDS of them.
export function pruneHistory(db: Database, key: Key, cutoff: number) {
	const oldestKept = sql`(SELECT ts FROM ledger_history
		WHERE twin = ${key.twin} AND account = ${key.account} AND name = ${key.name}
		ORDER BY ts DESC LIMIT 1 OFFSET ${MAX_HISTORY_RECORDS - 1})`;
	return db.delete(ledgerHistory).where(and(historyOf(key), sql`(${ledgerHistory.ts} < ${cutoff} OR ${ledgerHistory.ts} < ${oldestKept})`));
}

export function runBatch(db: Database, statements: BatchItem<"sqlite">[]) {
	if (statements.length === 0) return Promise.resolve([]);
	return db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}

function historyOf(key: Key) {
	return and(eq(ledgerHistory.twin, key.twin), eq(ledgerHistory.account, key.account), eq(ledgerHistory.name, key.name));
}

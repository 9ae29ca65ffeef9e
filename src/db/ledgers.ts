import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { ledgerEntries, ledgerHistory } from "./schema";
import { utf8Bytes } from "../base/json";

export type EntryRow = typeof ledgerEntries.$inferSelect;

export const MAX_HISTORY_RECORDS = 1000;

// The whole ledger of one account on one twin, one row_read per entry. A ledger is at most
// 64 KiB, so this read is bounded, and reading it whole makes what a request costs
// independent of which names it asks for.
export function readLedger(db: Database, twin: string, account: string) {
	return db
		.select()
		.from(ledgerEntries)
		.where(and(eq(ledgerEntries.twin, twin), eq(ledgerEntries.account, account)))
		.orderBy(ledgerEntries.name);
}

export type HistoryRow = { name: string; ts: number; value: string };
export type HistoryPosition = { name: string; ts: number };

// One page of history: the newest `range.limit` records per entry within [ge, le], in (name,
// newest first) order after `after`, up to `maxBytes` of values (at least one record). The
// sizes are added up through the ledger_history_sizes index, so the values of records past the
// page, up to 64 KiB each and 100 names x 100 records per request, are never read: only the
// page's own are. CROSS JOIN keeps the names outside, so each is one range of the index (a
// cursor's condition could otherwise make the planner walk the whole ledger's history).
// `names` must be sorted and start at `after`'s. Answers the page and whether records remain.
export async function readHistory(
	db: Database,
	key: { twin: string; account: string; names: string[] },
	range: { ge: number; le: number; limit: number },
	after: HistoryPosition | null,
	maxBytes: number,
): Promise<{ rows: HistoryRow[]; more: boolean }> {
	const { twin, account, names } = key;
	if (names.length === 0) return { rows: [], more: false };
	// `names` start at the cursor's: only its own records before the cursor are passed by.
	const past = after ? sql`AND (h.name <> ${after.name} OR h.ts < ${after.ts})` : sql``;
	// The entry's limit counts from its newest record in range, whichever page this is.
	const oldestKept = sql`(SELECT x.ts FROM ledger_history x
		WHERE x.twin = ${twin} AND x.account = ${account} AND x.name = n.value AND x.ts >= ${range.ge} AND x.ts <= ${range.le}
		ORDER BY x.ts DESC LIMIT 1 OFFSET ${range.limit - 1})`;
	const rows = (await db.all(sql`
		WITH picked AS (
			SELECT h.name, h.ts, h.bytes FROM json_each(${JSON.stringify(names)}) n
			CROSS JOIN ledger_history h ON h.twin = ${twin} AND h.account = ${account} AND h.name = n.value
			WHERE h.ts >= ${range.ge} AND h.ts <= ${range.le} AND h.ts >= coalesce(${oldestKept}, ${range.ge}) ${past}
		),
		sized AS (
			SELECT name, ts, SUM(bytes) OVER (ORDER BY name, ts DESC ROWS UNBOUNDED PRECEDING) AS running,
				row_number() OVER (ORDER BY name, ts DESC) AS position
			FROM picked
		),
		page AS (SELECT name, ts, position FROM sized WHERE running <= ${maxBytes} OR position = 1)
		SELECT p.name, p.ts, h.value, (SELECT count(*) FROM sized) > (SELECT count(*) FROM page) AS more
		FROM page p JOIN ledger_history h ON h.twin = ${twin} AND h.account = ${account} AND h.name = p.name AND h.ts = p.ts
		ORDER BY p.position`)) as (HistoryRow & { more: number })[];
	return { rows: rows.map(({ name, ts, value }) => ({ name, ts, value })), more: rows[0]?.more === 1 };
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
	const named = (name: typeof ledgerEntries.name | typeof ledgerHistory.name) =>
		sql`${name} IN (SELECT value FROM json_each(${JSON.stringify(names)}))`;
	return [
		db
			.delete(ledgerEntries)
			.where(and(eq(ledgerEntries.twin, twin), eq(ledgerEntries.account, account), named(ledgerEntries.name))),
		db
			.delete(ledgerHistory)
			.where(and(eq(ledgerHistory.twin, twin), eq(ledgerHistory.account, account), named(ledgerHistory.name))),
	] as const;
}

export function appendHistory(db: Database, key: Key, ts: number, value: string) {
	const bytes = utf8Bytes(value);
	return db
		.insert(ledgerHistory)
		.values({ ...key, ts, value, bytes })
		.onConflictDoUpdate({
			target: [ledgerHistory.twin, ledgerHistory.account, ledgerHistory.name, ledgerHistory.ts],
			set: { value, bytes },
		});
}

export function dropHistory(db: Database, key: Key) {
	return db.delete(ledgerHistory).where(historyOf(key));
}

// Keeps the records newer than `cutoff` and at most the newest MAX_HISTORY_RECORDS of them.
export function pruneHistory(db: Database, key: Key, cutoff: number) {
	const oldestKept = sql`(SELECT ts FROM ledger_history
		WHERE twin = ${key.twin} AND account = ${key.account} AND name = ${key.name}
		ORDER BY ts DESC LIMIT 1 OFFSET ${MAX_HISTORY_RECORDS - 1})`;
	return db
		.delete(ledgerHistory)
		.where(and(historyOf(key), sql`(${ledgerHistory.ts} < ${cutoff} OR ${ledgerHistory.ts} < ${oldestKept})`));
}

export function runBatch(db: Database, statements: BatchItem<"sqlite">[]) {
	if (statements.length === 0) return Promise.resolve([]);
	return db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}

function historyOf(key: Key) {
	return and(
		eq(ledgerHistory.twin, key.twin),
		eq(ledgerHistory.account, key.account),
		eq(ledgerHistory.name, key.name),
	);
}

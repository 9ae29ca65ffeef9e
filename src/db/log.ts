import { and, asc, eq, gt, lt, or, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { accountLog } from "./schema";

// The account log keeps, per account, its newest KEPT_MESSAGES lines, none older than KEPT_SECONDS.
export const KEPT_MESSAGES = 1000;
export const KEPT_SECONDS = 30 * 86_400;

// A line as the original writes them: "<Text>: key=[value], ..., ts=[<seconds>]."
export function logLine(text: string, fields: Record<string, string | number>, at: number): string {
	const parts = Object.entries({ ...fields, ts: tsText(at) }).map(([key, value]) => `${key}=[${value}]`);
	return `${text}: ${parts.join(", ")}.`;
}

// Seconds with at most three decimals, as JSON prints the API's timestamps.
export function tsText(at: number): string {
	return String(Math.round(at * 1000) / 1000);
}

// The lines' inserts and the account's pruning, for the batch of the work that writes them:
// a line commits exactly when what it reports does.
export function logStatements(db: Database, account: string, at: number, messages: string[]): BatchItem<"sqlite">[] {
	if (messages.length === 0) return [];
	// `INSERT ... SELECT` names every column; a null id is the table's to give.
	const insert = db
		.insert(accountLog)
		.select(sql`SELECT NULL, ${account}, ${at}, value FROM json_each(${JSON.stringify(messages)})`);
	return [insert, prune(db, account, at)];
}

// The lines, and the account's pruning, in a batch of their own: for work whose batch is in
// another database than the account's.
export async function writeLog(db: Database, account: string, at: number, messages: string[]) {
	const [insert, ...rest] = logStatements(db, account, at, messages);
	if (insert) await db.batch([insert, ...rest]);
}

// Older than KEPT_SECONDS, or past the KEPT_MESSAGES newest.
export function prune(db: Database, account: string, at: number) {
	const l = accountLog;
	const oldestKept = sql`(SELECT ${l.id} FROM ${l} WHERE ${l.account} = ${account} ORDER BY ${l.id} DESC LIMIT 1 OFFSET ${KEPT_MESSAGES - 1})`;
	return db.delete(l).where(and(eq(l.account, account), or(lt(l.at, at - KEPT_SECONDS), lt(l.id, oldestKept))));
}

// The same, right after an insert that may have written nothing: then it reads nothing. The
// rows to delete are chosen under a LIMIT of 0 (SQLite stops before reading) unless the
// statement before it changed rows.
export function pruneAfterInsert(db: Database, account: string, at: number) {
	const l = accountLog;
	const oldestKept = sql`(SELECT ${l.id} FROM ${l} WHERE ${l.account} = ${account} ORDER BY ${l.id} DESC LIMIT 1 OFFSET ${KEPT_MESSAGES - 1})`;
	const doomed = sql`SELECT ${l.id} FROM ${l} WHERE ${l.account} = ${account} AND (${l.at} < ${at - KEPT_SECONDS} OR ${l.id} < ${oldestKept})
		ORDER BY ${l.id} LIMIT (SELECT CASE WHEN changes() > 0 THEN -1 ELSE 0 END)`;
	return db.delete(l).where(sql`${l.id} IN (${doomed})`);
}

// The account's lines after `after` (an id; 0 for the oldest kept), oldest first.
export function readLog(db: Database, account: string, after: number, limit: number) {
	const l = accountLog;
	return db
		.select({ id: l.id, message: l.message })
		.from(l)
		.where(and(eq(l.account, account), gt(l.id, after)))
		.orderBy(asc(l.id))
		.limit(limit);
}

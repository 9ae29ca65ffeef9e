import { and, asc, eq, isNull, lt, lte, sql } from "drizzle-orm";
import type { Database } from "./client";
import { notificationOutbox, streamOutbox } from "./schema";

export type OutboxRow = typeof notificationOutbox.$inferSelect;

// A random RFC 4122 version 4 uuid in lowercase, made by SQLite: one per inserted row.
const NEW_UUID = sql.raw(`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
	|| substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`);

export type Publication = {
	account: string;
	twin: string;
	trigger: string;
	// Per topic, the event of the message: {<entry>: {new_value, old_value, changed_ts}}.
	events: Record<string, Record<string, unknown>>;
	at: number;
	// At most this many messages per topic (MAX_SUBSCRIPTIONS), so one write stays bounded.
	limit: number;
};

// The fan-out of one (trigger, topics) publication, as one statement for the ledger write's
// batch: a row per subscription to each topic that is confirmed and unexpired right now, at
// most `limit` per topic. Past the bound the publishing account's own subscriptions come first,
// then the subscribing accounts' in turn (each one's oldest, then each one's second, ...):
// taking the oldest across all accounts let one grantee at its own MAX_SUBSCRIPTIONS fill
// every place. `own` compares the subscriber with the publisher, so no parameter is added.
export function fanOut(db: Database, p: Publication) {
	// INSERT ... SELECT names every column of the table, in the table's order.
	return db.insert(notificationOutbox).select(sql`
		SELECT ${NEW_UUID}, ${p.account}, uuid, ${p.trigger}, ${p.twin}, event, view, ${p.at}, NULL, NULL FROM (
			SELECT uuid, event, view, row_number() OVER (PARTITION BY topic ORDER BY own DESC, turn, created_ts, uuid) AS n FROM (
				SELECT s.uuid, s.topic, s.created_ts, j.value AS event, s.account = s.publisher AS own,
					json_object('uuid', s.uuid, 'topic', s.topic, 'account', s.publisher, 'status', 'confirmed', 'validity_ts', s.validity_ts) AS view,
					row_number() OVER (PARTITION BY s.topic, s.account ORDER BY s.created_ts, s.uuid) AS turn
				FROM json_each(${JSON.stringify(p.events)}) AS j
				JOIN subscriptions AS s ON s.publisher = ${p.account} AND s.topic = j.key AND s.status = 'confirmed' AND s.validity_ts > ${p.at}
			)
		) WHERE n <= ${p.limit}`);
}

export function pendingMessages(db: Database, account: string, limit: number) {
	return db
		.select({ message: notificationOutbox.message, subscription: notificationOutbox.subscription })
		.from(notificationOutbox)
		.where(and(eq(notificationOutbox.account, account), isNull(notificationOutbox.queued_ts)))
		.limit(limit);
}

// Marks handed-over rows and drops those queued before `keptSince`: their attempts are over.
export async function markQueued(db: Database, account: string, messages: string[], at: number, keptSince: number) {
	const o = notificationOutbox;
	await db.batch([
		db
			.update(o)
			.set({ queued_ts: at })
			.where(sql`${o.message} IN (SELECT value FROM json_each(${JSON.stringify(messages)}))`),
		db.delete(o).where(and(eq(o.account, account), lt(o.queued_ts, keptSince))),
	]);
}

export async function findMessage(db: Database, message: string) {
	const [row] = await db.select().from(notificationOutbox).where(eq(notificationOutbox.message, message)).limit(1);
	return row;
}

export async function markDelivered(db: Database, message: string, at: number) {
	await db.update(notificationOutbox).set({ delivered_ts: at }).where(eq(notificationOutbox.message, message));
}

export type StreamRow = typeof streamOutbox.$inferSelect;

// The live streams' row of one (trigger, topics) publication, for the ledger write's batch:
// each entry's event body once, and per topic the names of the entries its message holds.
export function streamPublication(db: Database, p: Omit<Publication, "limit">) {
	const entries: Record<string, unknown> = {};
	const topics: Record<string, string[]> = {};
	for (const [topic, event] of Object.entries(p.events)) {
		topics[topic] = Object.keys(event);
		Object.assign(entries, event);
	}
	const row = { account: p.account, twin: p.twin, trigger: p.trigger, topics: JSON.stringify(topics), entries: JSON.stringify(entries), at: p.at };
	return db.insert(streamOutbox).values(row);
}

// The account's oldest rows not yet handed to its stream object, in the order they committed.
export function pendingStreamRows(db: Database, account: string, limit: number): Promise<StreamRow[]> {
	return db.select().from(streamOutbox).where(eq(streamOutbox.account, account)).orderBy(asc(streamOutbox.id)).limit(limit);
}

export async function deleteStreamRows(db: Database, account: string, upTo: number) {
	await db.delete(streamOutbox).where(and(eq(streamOutbox.account, account), lte(streamOutbox.id, upTo)));
}

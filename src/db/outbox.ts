import { and, asc, eq, isNull, lt, lte, sql } from "drizzle-orm";
import type { Database } from "./client";
import { accountLog, notificationOutbox, streamOutbox } from "./schema";
import { pruneAfterInsert, tsText } from "./log";

export type OutboxRow = typeof notificationOutbox.$inferSelect;

// A random RFC 4122 version 4 uuid in lowercase, made by SQLite: one per inserted row.
const NEW_UUID = sql.raw(`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
	|| substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`);

// One message of a publication: a twin, a topic of the publishing account, and the event.
export type Published = { twin: string; topic: string; event: Record<string, unknown> };

export type Publication = {
	account: string;
	trigger: string;
	// A ledger write's: one per topic, on its twin; a sticker run's: one per sticker and topic.
	messages: Published[];
	at: number;
	// At most this many subscriptions per message (MAX_SUBSCRIPTIONS), so one write stays bounded.
	limit: number;
};

// The fan-out of one publication, as one statement for the write's batch: a row per
// subscription to each message's topic that is confirmed and unexpired right now, at most
// `limit` per message. Past the bound the publishing account's own subscriptions come first,
// then the subscribing accounts' in turn (each one's oldest, then each one's second, ...):
// taking the oldest across all accounts let one grantee at its own MAX_SUBSCRIPTIONS fill
// every place. `own` compares the subscriber with the publisher, so no parameter is added.
export function fanOut(db: Database, p: Publication) {
	// INSERT ... SELECT names every column of the table, in the table's order.
	return db.insert(notificationOutbox).select(sql`
		SELECT ${NEW_UUID}, ${p.account}, uuid, ${p.trigger}, twin, event, view, ${p.at}, NULL, NULL FROM (
			SELECT uuid, twin, event, view, row_number() OVER (PARTITION BY k ORDER BY own DESC, turn, created_ts, uuid) AS n FROM (
				SELECT s.uuid, s.created_ts, j.key AS k, json_extract(j.value, '$.twin') AS twin, json_extract(j.value, '$.event') AS event,
					s.account = s.publisher AS own,
					json_object('uuid', s.uuid, 'topic', s.topic, 'account', s.publisher, 'status', 'confirmed', 'validity_ts', s.validity_ts) AS view,
					row_number() OVER (PARTITION BY j.key, s.account ORDER BY s.created_ts, s.uuid) AS turn
				FROM json_each(${JSON.stringify(p.messages)}) AS j
				JOIN subscriptions AS s ON s.publisher = ${p.account} AND s.topic = json_extract(j.value, '$.topic')
					AND s.status = 'confirmed' AND s.validity_ts > ${p.at}
			)
		) WHERE n <= ${p.limit}`);
}

// The publisher's log lines for the messages whose subscriptions passed `limit`, and the
// log's pruning, run only when a line was written: the batch's own reads stay at most
// `limit` + 1 subscriptions per message. Goes right after fanOut in the batch.
export function truncationLog(db: Database, p: Publication) {
	const lines = sql`
		SELECT NULL, ${p.account}, ${p.at}, 'Notification fan-out truncated at MAX_SUBSCRIPTIONS: topic=[' || json_extract(j.value, '$.topic')
			|| '], trigger=[' || ${p.trigger} || '], twin=[' || json_extract(j.value, '$.twin') || '], ts=[' || ${tsText(p.at)} || '].'
		FROM json_each(${JSON.stringify(p.messages.map(({ twin, topic }) => ({ twin, topic })))}) AS j
		WHERE (SELECT count(*) FROM (
			SELECT 1 FROM subscriptions AS s WHERE s.publisher = ${p.account} AND s.topic = json_extract(j.value, '$.topic')
				AND s.status = 'confirmed' AND s.validity_ts > ${p.at} LIMIT ${p.limit + 1}
		)) > ${p.limit}`;
	return [db.insert(accountLog).select(lines), pruneAfterInsert(db, p.account, p.at)];
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

// The live streams' rows of a publication, for the write's batch: one per source of events (a
// ledger write's, or one sticker's), holding each event's members once, and per topic the
// names of the members its message holds. A ledger event's members are its entries; a
// sticker's are its color, note, validity_ts and created_ts, so the object builds either
// message the same way. The rows take ids in the order given. `sights` holds, per source, what
// the rules of a confined reader read of it (JSON text), or null.
export function streamPublication(db: Database, p: { account: string; trigger: string; at: number; sources: Published[][]; sights: (string | null)[] }) {
	const rows = p.sources.map((messages, i) => {
		const entries: Record<string, unknown> = {};
		const topics: Record<string, string[]> = {};
		for (const { topic, event } of messages) {
			topics[topic] = Object.keys(event);
			Object.assign(entries, event);
		}
		return [messages[0].twin, JSON.stringify(topics), JSON.stringify(entries), p.sights[i] ?? null];
	});
	return db.insert(streamOutbox).select(sql`
		SELECT NULL, ${p.account}, json_extract(value, '$[0]'), ${p.trigger}, json_extract(value, '$[1]'), json_extract(value, '$[2]'), ${p.at},
			json_extract(value, '$[3]')
		FROM json_each(${JSON.stringify(rows)}) ORDER BY key`);
}

// The account's oldest rows not yet handed to its stream object, in the order they committed.
export function pendingStreamRows(db: Database, account: string, limit: number): Promise<StreamRow[]> {
	return db.select().from(streamOutbox).where(eq(streamOutbox.account, account)).orderBy(asc(streamOutbox.id)).limit(limit);
}

export async function deleteStreamRows(db: Database, account: string, upTo: number) {
	await db.delete(streamOutbox).where(and(eq(streamOutbox.account, account), lte(streamOutbox.id, upTo)));
}

import { and, asc, eq, isNull, lt, lte, sql } from "drizzle-orm";
import type { Database } from "./client";
import { accountLog, notificationOutbox, outboxSights, streamOutbox } from "./schema";
import { pruneAfterInsert, tsText } from "./log";

export type OutboxRow = typeof notificationOutbox.$inferSelect;

// A random RFC 4122 version 4 uuid in lowercase, made by SQLite: one per inserted row.
const NEW_UUID =
	sql.raw(`lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || substr(hex(randomblob(2)), 2) || '-'
	|| substr('89ab', 1 + (abs(random()) % 4), 1) || substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))`);

// One message of a publication: a twin, a topic of the publishing account, and the event; and
// the id of its write's sight (insertSight), by which a confined reader's copy is filtered.
export type Published = { twin: string; topic: string; event: Record<string, unknown>; sight: string | null };

// A publishing write's sight, once for all its messages (and, for stickers, once per sticker).
export function insertSight(db: Database, sight: { id: string; account: string; data: string; at: number }) {
	return db
		.insert(outboxSights)
		.values({ id: sight.id, account: sight.account, data: sight.data, created_ts: sight.at });
}

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
		SELECT ${NEW_UUID}, ${p.account}, uuid, ${p.trigger}, twin, event, view, ${p.at}, NULL, NULL, sight FROM (
			SELECT uuid, twin, event, view, sight, row_number() OVER (PARTITION BY k ORDER BY own DESC, turn, created_ts, uuid) AS n FROM (
				SELECT s.uuid, s.created_ts, j.key AS k, json_extract(j.value, '$.twin') AS twin, json_extract(j.value, '$.event') AS event,
					json_extract(j.value, '$.sight') AS sight,
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
	const o = notificationOutbox;
	return db
		.select({ message: o.message, subscription: o.subscription, trigger: o.trigger, event: o.event, sight: o.sight })
		.from(o)
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
		forgetSights(db, account),
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
// message the same way. The rows take ids in the order given, each with its source's sight.
export function streamPublication(
	db: Database,
	p: { account: string; trigger: string; at: number; sources: Published[][] },
) {
	const rows = p.sources.map((messages) => {
		const entries: Record<string, unknown> = {};
		const topics: Record<string, string[]> = {};
		for (const { topic, event } of messages) {
			topics[topic] = Object.keys(event);
			Object.assign(entries, event);
		}
		return [messages[0].twin, JSON.stringify(topics), JSON.stringify(entries), messages[0].sight];
	});
	return db.insert(streamOutbox).select(sql`
		SELECT NULL, ${p.account}, json_extract(value, '$[0]'), ${p.trigger}, json_extract(value, '$[1]'), json_extract(value, '$[2]'), ${p.at},
			json_extract(value, '$[3]')
		FROM json_each(${JSON.stringify(rows)}) ORDER BY key`);
}

// The account's oldest rows not yet handed to its stream object, in the order they committed,
// each with its sight's data in place of its id.
export function pendingStreamRows(db: Database, account: string, limit: number): Promise<StreamRow[]> {
	const s = streamOutbox;
	return db
		.select({
			id: s.id,
			account: s.account,
			twin: s.twin,
			trigger: s.trigger,
			topics: s.topics,
			entries: s.entries,
			at: s.at,
			sight: outboxSights.data,
		})
		.from(s)
		.leftJoin(outboxSights, eq(outboxSights.id, s.sight))
		.where(eq(s.account, account))
		.orderBy(asc(s.id))
		.limit(limit);
}

// The sights of `ids` by id, as JSON text.
export async function sightsOf(db: Database, ids: string[]): Promise<Map<string, string>> {
	if (ids.length === 0) return new Map();
	const rows = await db
		.select({ id: outboxSights.id, data: outboxSights.data })
		.from(outboxSights)
		.where(sql`${outboxSights.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`);
	return new Map(rows.map((row) => [row.id, row.data]));
}

// The account's sights no pending row names any more: every stream row that named one was
// handed over, every webhook row queued or dropped. It closes each batch of the drain that lets
// rows go, at no round trip of its own. A write that commits meanwhile adds its sight and its
// rows in one batch, which this statement sees whole or not at all.
function forgetSights(db: Database, account: string) {
	const named = sql`SELECT ${streamOutbox.sight} FROM ${streamOutbox} WHERE ${streamOutbox.account} = ${account} AND ${streamOutbox.sight} IS NOT NULL
		UNION SELECT ${notificationOutbox.sight} FROM ${notificationOutbox}
		WHERE ${notificationOutbox.account} = ${account} AND ${notificationOutbox.queued_ts} IS NULL AND ${notificationOutbox.sight} IS NOT NULL`;
	return db
		.delete(outboxSights)
		.where(and(eq(outboxSights.account, account), sql`${outboxSights.id} NOT IN (${named})`));
}

// Webhook rows as their subscribers may read them: those filtered to nothing deleted unsent,
// the others' events replaced by what is left of them; one batch.
export async function settleFiltered(
	db: Database,
	account: string,
	dropped: string[],
	narrowed: { message: string; event: string }[],
) {
	if (dropped.length === 0 && narrowed.length === 0) return;
	const o = notificationOutbox;
	await db.batch([
		db.delete(o).where(sql`${o.message} IN (SELECT value FROM json_each(${JSON.stringify(dropped)}))`),
		...narrowed.map(({ message, event }) => db.update(o).set({ event }).where(eq(o.message, message))),
		forgetSights(db, account),
	]);
}

export async function deleteStreamRows(db: Database, account: string, upTo: number) {
	await db.batch([
		db.delete(streamOutbox).where(and(eq(streamOutbox.account, account), lte(streamOutbox.id, upTo))),
		forgetSights(db, account),
	]);
}

import { type Database, database } from "../db/client";
import { homeDatabase, homeOf } from "../db/shards";
import {
	deleteStreamRows,
	markQueued,
	pendingMessages,
	pendingStreamRows,
	settleFiltered,
	sightsOf,
} from "../db/outbox";
import { subscribersOf } from "../db/subscriptions";
import type { Caller } from "../base/caller";
import { FILTER_TURN_UNITS, filterEvent, readerKey, rowScoped, type Sight } from "../rules/reader-filter";
import { now } from "../base/time";
import { RETRY_WINDOW } from "./retry-schedule";
import type { NotificationJob } from "./jobs";

// How far ahead of a write with notifications the account's alarm is set: if the object goes
// away between the commit and the drain, the alarm drains what it left.
export const DRAIN_GRACE_SECONDS = 30;
export const drainRetryAt = (at: number) => at + DRAIN_GRACE_SECONDS;

// Queued rows are kept this long after they were handed to the queue: every attempt of a
// message, all within its retry window, reads its row. The slack covers a queue delivering
// late and a delivery object finishing the last attempt after a crash.
export const OUTBOX_KEEP_SECONDS = RETRY_WINDOW + 86_400;

// A queue takes at most 100 messages per sendBatch.
const DRAIN_PAGE = 100;

// Stream rows per call to the account's stream object: each holds one write's events (at most
// about 128 KiB of values), so a call stays a few MB at most.
const STREAM_PAGE = 25;

// Hands what the account's writes committed to whoever delivers it: the webhook messages to
// the queue, the live streams' rows to the account's stream object. Answers whether rows are
// left (one of them failed us), for the alarm to try again.
// `queued` hears how many webhook messages each page handed to the queue (the account's usage).
// `homes` finds a subscriber's database, where the users and roles its messages are read as
// are kept (homesIn).
type Destinations = {
	queue: Queue;
	streams: Env["STREAMS"];
	homes: Homes;
	queued?: (messages: number) => void;
};

type Homes = (account: string) => { binding: string; db: Database };

// The database of each account, by its binding (docs/scaling.md).
export const homesIn =
	(env: Env): Homes =>
	(account) => ({ binding: homeOf(env, account), db: database(homeDatabase(env, account)) });

export async function drainOutbox(db: Database, to: Destinations, account: string): Promise<boolean> {
	const [webhooks, streams] = await Promise.all([
		drainWebhooks(db, to, account),
		drainStreams(db, to.streams, account),
	]);
	return webhooks || streams;
}

// The unsent webhook rows, page by page, each page marked once the queue has it. A crash
// between the send and the mark sends that page again: delivery is at least once, and the
// message uuid (webhook-id) lets a receiver drop the duplicate.
async function drainWebhooks(db: Database, to: Destinations, account: string): Promise<boolean> {
	const { queue, queued } = to;
	for (;;) {
		const page = await pendingMessages(db, account, DRAIN_PAGE);
		if (page.length === 0) return false;
		// Each as its subscriber may read it: a subscriber whose role confines it gets what is left
		// of the event, nothing when nothing is (the row is deleted unsent: no delivery, attempt,
		// record or count). Settled before the queue has them, so a retry sends the same bytes.
		// Past a turn's filter work the page's rest waits: the alarm comes back for it.
		const { rows, more } = await filtered(db, to.homes, account, page, now());
		if (rows.length === 0) {
			if (more) return true;
			if (page.length < DRAIN_PAGE) return false;
			continue;
		}
		// The time the rows are marked queued is their retry window's start: the outbox keeps
		// them long enough after it.
		const at = now();
		const jobs = rows.map((row): { body: NotificationJob } => ({
			body: { kind: "notification", message: row.message, subscription: row.subscription, since: at },
		}));
		try {
			await queue.sendBatch(jobs);
		} catch (error) {
			console.error(JSON.stringify({ outbox: account, pending: rows.length, error: String(error) }));
			return true;
		}
		queued?.(rows.length);
		await markQueued(
			db,
			account,
			rows.map((row) => row.message),
			at,
			at - OUTBOX_KEEP_SECONDS,
		);
		if (more) return true;
		if (page.length < DRAIN_PAGE) return false;
	}
}

type Pending = Awaited<ReturnType<typeof pendingMessages>>[number];

// The page's rows as their subscribers may read them (rules/reader-filter.ts), the others
// deleted; one read of the subscriptions, one of their subscribers in each subscriber's database
// (all at once) and one of the sights, and one evaluation per group of subscribers whose rules
// read equal values and per message, within a turn's work: `more` when the rest of the page
// waits for the next turn, untouched.
async function filtered(
	db: Database,
	homes: Homes,
	account: string,
	page: Pending[],
	at: number,
): Promise<{ rows: Pending[]; more: boolean }> {
	const subscribers = await subscribersOf(db, [...new Set(page.map((row) => row.subscription))], homes);
	const readers = new Map<string, { reader: Caller; key: string }>();
	for (const [subscription, s] of subscribers) {
		const reader: Caller = { ...s, dict: s.dict ?? null };
		if (rowScoped(reader)) readers.set(subscription, { reader, key: readerKey(reader) });
	}
	if (readers.size === 0) return { rows: page, more: false };
	const sights = await sightsOf(db, [
		...new Set(page.filter((row) => readers.has(row.subscription) && row.sight).map((row) => row.sight!)),
	]);
	const shown = new Map<string, string | null>();
	let units = 0;
	const kept: Pending[] = [];
	const dropped: string[] = [];
	const narrowed: { message: string; event: string }[] = [];
	for (const row of page) {
		const subscriber = readers.get(row.subscription);
		if (!subscriber) {
			kept.push(row);
			continue;
		}
		const key = `${subscriber.key}\n${row.sight}\n${row.trigger}\n${row.event}`;
		if (!shown.has(key)) {
			if (units >= FILTER_TURN_UNITS) {
				await settleFiltered(db, account, dropped, narrowed);
				return { rows: kept, more: true };
			}
			// A message whose write recorded no sight cannot be decided: it is not sent.
			const sight = row.sight ? sights.get(row.sight) : undefined;
			const result = sight
				? filterEvent(subscriber.reader, JSON.parse(sight) as Sight, row.trigger, JSON.parse(row.event), at)
				: { event: null, units: 0 };
			units += result.units;
			shown.set(key, result.event === null ? null : JSON.stringify(result.event));
		}
		const event = shown.get(key) ?? null;
		if (event === null) dropped.push(row.message);
		else {
			if (event !== row.event) narrowed.push({ message: row.message, event });
			kept.push({ ...row, event });
		}
	}
	await settleFiltered(db, account, dropped, narrowed);
	return { rows: kept, more: false };
}

// The stream rows in the order they committed, deleted once the object has taken them. The
// object keeps the id of the last row it took, so a page sent again after a lost answer is
// not numbered twice.
async function drainStreams(db: Database, streams: Env["STREAMS"], account: string): Promise<boolean> {
	for (;;) {
		const rows = await pendingStreamRows(db, account, STREAM_PAGE);
		if (rows.length === 0) return false;
		try {
			await streams.getByName(account).append(account, rows);
		} catch (error) {
			console.error(JSON.stringify({ streams: account, pending: rows.length, error: String(error) }));
			return true;
		}
		await deleteStreamRows(db, account, rows[rows.length - 1].id);
		if (rows.length < STREAM_PAGE) return false;
	}
}

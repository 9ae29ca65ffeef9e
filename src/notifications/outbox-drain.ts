import type { Database } from "../db/client";
import { deleteStreamRows, markQueued, pendingMessages, pendingStreamRows } from "../db/outbox";
import { now } from "../base/time";
import { RETRY_WINDOW } from "./retry-schedule";
import type { NotificationJob } from "./jobs";

// How far ahead of a write with notifications the account's alarm is set: if the object goes
// away between the commit and the drain, the alarm drains what it left.
export const DRAIN_GRACE_SECONDS = 30;

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
type Destinations = { queue: Queue; streams: Env["STREAMS"]; queued?: (messages: number) => void };

export async function drainOutbox(db: Database, to: Destinations, account: string): Promise<boolean> {
	const [webhooks, streams] = await Promise.all([drainWebhooks(db, to.queue, account, to.queued), drainStreams(db, to.streams, account)]);
	return webhooks || streams;
}

// The unsent webhook rows, page by page, each page marked once the queue has it. A crash
// between the send and the mark sends that page again: delivery is at least once, and the
// message uuid (webhook-id) lets a receiver drop the duplicate.
async function drainWebhooks(db: Database, queue: Queue, account: string, queued?: (messages: number) => void): Promise<boolean> {
	for (;;) {
		const rows = await pendingMessages(db, account, DRAIN_PAGE);
		if (rows.length === 0) return false;
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
		await markQueued(db, account, rows.map((row) => row.message), at, at - OUTBOX_KEEP_SECONDS);
		if (rows.length < DRAIN_PAGE) return false;
	}
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

// Queue delays between attempts, after attempt 1, 2, ...: about 23.7 hours in all, each within
// the platform's 12-hour cap. After the attempt that follows the last entry, the consumer sends
// the message to the dead-letter queue (wrangler.toml's max_retries leaves room for the returns
// of attempts that outlast the consumer's wait).
export const RETRY_SCHEDULE = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800] as const;
export const MAX_QUEUE_DELAY = 43_200;

// The retries of a message end this long after it was first queued (about a day), however
// long its receiver asks us to wait. The outbox keeps a notification only a while longer
// (OUTBOX_KEEP_SECONDS, outbox-drain.ts): an attempt later than that would find nothing to send.
export const RETRY_WINDOW = 86_400;

// Seconds left of a job's retry window at `at`, from `since`, when its message was first
// queued. A job queued before jobs carried it gets a whole window from now.
export function windowLeft(since: number | undefined, at: number) {
	return (since ?? at) + RETRY_WINDOW - at;
}

// The delay before the next attempt after attempt `attempt` failed, or null when it was the
// last: the schedule is used up, or `left` seconds of the retry window are less than one.
// Retry-After is honoured as "not before": it lengthens a delay, never shortens one, and is
// capped at the queue's 12 hours and at the window's end, where one last attempt is made.
export function retryDelay(attempt: number, retryAfter: number | null, left: number): number | null {
	const scheduled = RETRY_SCHEDULE[attempt - 1];
	if (scheduled === undefined) return null;
	const delay = Math.min(Math.max(scheduled, retryAfter ?? 0), MAX_QUEUE_DELAY, Math.floor(left));
	return delay >= 1 ? delay : null;
}

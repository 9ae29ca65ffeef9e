export const DELIVERY_TIMEOUT_MS = 10_000;

// Queue delays between attempts, after attempt 1, 2, ...: about 23.7 hours in all, each within
// the platform's 12-hour cap. wrangler.toml's max_retries equals its length, so the attempt
// after the last entry that fails goes to the dead-letter queue.
export const RETRY_SCHEDULE = [5, 30, 120, 600, 1800, 3600, 7200, 14_400, 28_800, 28_800] as const;
export const MAX_QUEUE_DELAY = 43_200;

// The retries of a message end this long after it was first queued, however long its receiver
// asks us to wait (contract section 7: about a day). The outbox keeps a notification only a
// while longer (OUTBOX_KEEP_SECONDS, src/durable/outbox-drain.ts): an attempt later than that would find nothing to send.
export const RETRY_WINDOW = 86_400;

// Seconds left of a job's retry window at `at`, from `since`, when its message was first
// queued. A job queued before jobs carried it gets a whole window from now.
export function windowLeft(since: number | undefined, at: number) {
	return (since ?? at) + RETRY_WINDOW - at;
}

export type DeliveryOutcome = {
	kind: "delivered" | "permanent" | "retry";
	detail: string;
	status: number | null;
	durationMs: number;
	// Seconds the receiver asked us to wait (Retry-After), when it said so.
	retryAfter: number | null;
};

// 2xx is delivered. Redirects are not followed and, like 4xx other than 408 and 429, will not
// get better by retrying. 5xx, 408, 429, timeouts and network errors are worth another try.
export function classify(status: number): DeliveryOutcome["kind"] {
	if (status >= 200 && status < 300) return "delivered";
	if (status >= 500 || status === 408 || status === 429) return "retry";
	return "permanent";
}

// Retry-After is either delay-seconds or an HTTP date (RFC 9110 10.2.3).
export function parseRetryAfter(value: string | null, nowMs: number): number | null {
	if (!value) return null;
	const text = value.trim();
	if (/^\d+$/.test(text)) return Number(text);
	const date = Date.parse(text);
	if (Number.isNaN(date)) return null;
	return Math.max(0, Math.ceil((date - nowMs) / 1000));
}

export async function deliver(url: string, body: string, headers: Record<string, string>): Promise<DeliveryOutcome> {
	const started = Date.now();
	try {
		const response = await fetch(url, {
			method: "POST",
			body,
			headers: { "content-type": "application/json", "user-agent": "twin-registry-webhooks", ...headers },
			redirect: "manual",
			signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
		});
		await response.body?.cancel();
		const kind = classify(response.status);
		return {
			kind,
			detail: `HTTP ${response.status}`,
			status: response.status,
			durationMs: Date.now() - started,
			retryAfter: kind === "retry" ? parseRetryAfter(response.headers.get("retry-after"), Date.now()) : null,
		};
	} catch (error) {
		const timedOut = (error as Error)?.name === "TimeoutError";
		return {
			kind: "retry",
			detail: timedOut ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s` : `network error: ${String(error)}`,
			status: null,
			durationMs: Date.now() - started,
			retryAfter: null,
		};
	}
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

import { type Database, database } from "../db/client";
import { recordAttempt } from "../db/deliveries";
import { findSubscription, patchSubscription, type SubscriptionRow } from "../db/subscriptions";
import { now } from "../base/time";
import { type DeliveryOutcome, deliver, RETRY_SCHEDULE, retryDelay, windowLeft } from "./delivery";
import { messageHash, standardWebhookHeaders } from "./hash";
import { signingKeys } from "./keys";
import { type ConfirmationJob, confirmationMessage } from "./message";
import { open, tokenUrl } from "./seal";

// What is to become of a job after an attempt: nothing more, another attempt after `delay`
// seconds, or the dead-letter queue (the schedule is used up).
export type Settlement = { action: "done" } | { action: "retry"; delay: number } | { action: "dead" };

// The attempt number of a job on its `attempts`-th arrival from the queue. A job the delivery
// object handed back to the queue (see src/durable/delivery.ts) carries how many came before.
export function attemptNumber(job: { after?: number }, attempts: number) {
	return (job.after ?? 0) + attempts;
}

// One delivery attempt of a confirmation message, recorded in the subscription's deliveries.
export async function attemptConfirmation(env: Env, job: ConfirmationJob, attempt: number): Promise<Settlement> {
	const db = database(env.DB);
	const row = await findSubscription(db, job.subscription);
	// Gone, replaced by a resend, delivered before (a message can arrive twice), or no longer
	// pending: there is nothing left to deliver.
	if (!row || row.message !== job.message || row.status !== "pending" || row.delivered_ts !== null || !row.sealed_token) {
		return { action: "done" };
	}
	const at = now();
	if (row.validity_ts <= at) {
		await patchSubscription(db, row.uuid, { status: "expired" }, at, { status: "pending" });
		return { action: "done" };
	}

	const keys = await signingKeys(env, row, at);
	const body = await confirmationBody(env, row, at, keys[0]);
	const headers = await standardWebhookHeaders(row.message, Math.floor(at), body, keys);
	const outcome = await deliver(row.callback_url, body, headers);

	return settle(db, { subscription: row.uuid, message: row.message, attempt, at, since: job.since, confirmation: true }, outcome);
}

// `since`: when the message was first queued, as its job carries it.
type Attempted = { subscription: string; message: string; attempt: number; at: number; since?: number; confirmation: boolean };

// Records an attempt's outcome in the subscription's deliveries and says what comes next. A
// message whose retry window is over goes the way of one whose schedule is used up.
export async function settle(db: Database, a: Attempted, outcome: DeliveryOutcome): Promise<Settlement> {
	const delay = outcome.kind === "retry" ? retryDelay(a.attempt, outcome.retryAfter, windowLeft(a.since, now())) : null;
	const asked = outcome.retryAfter !== null ? ` (Retry-After: ${outcome.retryAfter})` : "";
	const over = a.attempt > RETRY_SCHEDULE.length ? "" : " (the retry window is over)";
	const note = { delivered: "", permanent: ", not retried", retry: delay === null ? `, retries exhausted${over}` : `, retry in ${delay} s${asked}` };
	await recordAttempt(
		db,
		{
			subscription: a.subscription,
			message: a.message,
			attempt: a.attempt,
			attempted_ts: a.at,
			outcome: outcome.kind === "delivered" ? "delivered" : delay !== null ? "retry" : "failed",
			http_status: outcome.status,
			duration_ms: outcome.durationMs,
			next_attempt_ts: delay === null ? null : Math.round((now() + delay) * 1000) / 1000,
			detail: `${outcome.detail}${note[outcome.kind]}`,
		},
		outcome.kind === "permanent",
		a.confirmation,
	);
	if (outcome.kind !== "retry") return { action: "done" };
	return delay === null ? { action: "dead" } : { action: "retry", delay };
}

// The hash is keyed with the current key only; the signatures cover the previous one too.
async function confirmationBody(env: Env, row: SubscriptionRow, at: number, key: Uint8Array | undefined) {
	const token = await open(env, row.uuid, "token", row.sealed_token as string);
	const content = confirmationMessage(row, tokenUrl(env, row.publisher, token), at);
	return JSON.stringify({ ...content, hash: key ? messageHash(content, key) : null });
}

import { type Database, database } from "../db/client";
import { homeDatabase, homeOf } from "../db/shards";
import { recordAttempt } from "../db/deliveries";
import { logLine, writeLog } from "../db/log";
import { findMessage, markDelivered } from "../db/outbox";
import { effectiveStatus, findSubscription, patchSubscription, type SubscriptionRow } from "../db/subscriptions";
import { now } from "../base/time";
import { open } from "../base/seal";
import type { ConfirmationJob, NotificationJob } from "./jobs";
import { confirmationMessage, notificationMessage, tokenUrl } from "./messages";
import { type DeliveryOutcome, deliver } from "./post";
import { RETRY_SCHEDULE, retryDelay, windowLeft } from "./retry-schedule";
import { messageHash, signingKeys, standardWebhookHeaders } from "./signing";

// What is to become of a job after an attempt: nothing more, another attempt after `delay`
// seconds, or the dead-letter queue (the schedule is used up).
export type Settlement = { action: "done" } | { action: "retry"; delay: number } | { action: "dead" };

// One delivery attempt of a confirmation message, recorded in the subscription's deliveries.
export async function attemptConfirmation(env: Env, job: ConfirmationJob, attempt: number): Promise<Settlement> {
	const db = database(homeDatabase(env, job.subscription));
	const row = await findSubscription(db, job.subscription);
	// Gone, replaced by a resend, delivered before (a message can arrive twice), or no longer
	// pending: there is nothing left to deliver.
	if (
		!row ||
		row.message !== job.message ||
		row.status !== "pending" ||
		row.delivered_ts !== null ||
		!row.sealed_token
	) {
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

	const attempted = {
		subscription: row.uuid,
		account: row.account,
		trigger: "Confirmation",
		message: row.message,
		attempt,
		at,
		since: job.since,
		confirmation: true,
	};
	return settle(env, db, attempted, outcome);
}

// `since`: when the message was first queued, as its job carries it. `account` owns the
// subscription; `trigger` is the message's (Confirmation for a confirmation).
type Attempted = {
	subscription: string;
	account: string;
	trigger: string;
	message: string;
	attempt: number;
	at: number;
	since?: number;
	confirmation: boolean;
};

// Records an attempt's outcome in the subscription's deliveries and says what comes next. A
// message whose retry window is over goes the way of one whose schedule is used up. `db` is the
// subscription's database (its publisher's).
export async function settle(env: Env, db: Database, a: Attempted, outcome: DeliveryOutcome): Promise<Settlement> {
	const delay = outcome.kind === "retry" ? retryDelay(a.attempt, outcome.retryAfter, windowLeft(a.since, now())) : null;
	const asked = outcome.retryAfter !== null ? ` (Retry-After: ${outcome.retryAfter})` : "";
	const over = a.attempt > RETRY_SCHEDULE.length ? "" : " (the retry window is over)";
	const note = {
		delivered: "",
		permanent: ", not retried",
		retry: delay === null ? `, retries exhausted${over}` : `, retry in ${delay} s${asked}`,
	};
	// A message that ends here without a 2xx leaves a line in the log of the subscription's account.
	const failed = outcome.kind === "permanent" || (outcome.kind === "retry" && delay === null);
	const line = logLine(
		"Webhook delivery failed for good",
		{ subscription: a.subscription, message: a.message, trigger: a.trigger, reason: outcome.reason },
		now(),
	);
	// The line goes to the subscriber's database. When that is the subscription's, it commits in
	// the attempt's batch, exactly when the attempt does. When it is another, no batch reaches
	// both: it is written right after the attempt committed, so a line tells of a recorded
	// attempt only. Its failure is logged and the settlement stands: retrying the message would
	// send it again only to write the line, and a line the retry wrote could tell of another
	// attempt's end. A line is so written once, or lost with the moment its database failed.
	const log = failed ? { account: a.account, line } : undefined;
	const apart = log !== undefined && homeOf(env, a.account) !== homeOf(env, a.subscription);
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
		apart ? undefined : log,
	);
	if (apart) {
		await writeLog(database(homeDatabase(env, log.account)), log.account, a.at, [log.line]).catch((error: unknown) =>
			console.error(JSON.stringify({ log: log.account, subscription: a.subscription, error: String(error) })),
		);
	}
	if (outcome.kind !== "retry") return { action: "done" };
	return delay === null ? { action: "dead" } : { action: "retry", delay };
}

// The hash is keyed with the current key only; the signatures cover the previous one too.
async function confirmationBody(env: Env, row: SubscriptionRow, at: number, key: Uint8Array | undefined) {
	const token = await open(env, row.uuid, "token", row.sealed_token as string);
	const content = confirmationMessage(row, tokenUrl(env, row.publisher, token), at);
	return JSON.stringify({ ...content, hash: key ? messageHash(content, key) : null });
}

// One delivery attempt of a notification, signed with the subscription's current keys and
// recorded in its deliveries. It never changes the subscription's status.
export async function attemptNotification(env: Env, job: NotificationJob, attempt: number): Promise<Settlement> {
	const db = database(homeDatabase(env, job.subscription));
	const row = await findMessage(db, job.message);
	// Delivered before (a queue message can arrive twice).
	if (row && row.delivered_ts !== null) return { action: "done" };
	const subscription = await findSubscription(db, job.subscription);
	const at = now();
	// Ended since the message was written (unsubscribed, revoked, expired): the receiver asked
	// for nothing more, and its keys are gone.
	if (!subscription || effectiveStatus(subscription, at) !== "confirmed") return { action: "done" };
	// The outbox no longer keeps it: the attempt came past its retry window and the slack after
	// it (a queue late by days, or a job from before retries were bounded). Nothing can be sent,
	// but the attempt is recorded as failed in the subscription's deliveries like any other: that
	// is where the owner looks for what became of its messages, which a log line would not tell.
	if (!row) {
		const detail = "not sent: the message is no longer kept, its retry window is long over";
		const outcome = {
			kind: "permanent",
			detail,
			status: null,
			durationMs: 0,
			retryAfter: null,
			reason: "the message is no longer kept",
		} as const;
		const attempted = {
			subscription: subscription.uuid,
			account: subscription.account,
			trigger: "Notification",
			message: job.message,
			attempt,
			at,
			since: job.since,
			confirmation: false,
		};
		return settle(env, db, attempted, outcome);
	}

	const keys = await signingKeys(env, subscription, at);
	const content = notificationMessage(row);
	const body = JSON.stringify({ ...content, hash: keys[0] ? messageHash(content, keys[0]) : null });
	const headers = await standardWebhookHeaders(row.message, Math.floor(at), body, keys);
	const outcome = await deliver(subscription.callback_url, body, headers);
	if (outcome.kind === "delivered") await markDelivered(db, row.message, at);
	const attempted = {
		subscription: subscription.uuid,
		account: subscription.account,
		trigger: row.trigger,
		message: row.message,
		attempt,
		at,
		since: job.since,
		confirmation: false,
	};
	return settle(env, db, attempted, outcome);
}

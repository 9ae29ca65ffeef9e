import { database } from "../db/client";
import { findMessage, markDelivered, type OutboxRow } from "../db/outbox";
import { effectiveStatus, findSubscription } from "../db/subscriptions";
import { now } from "../base/time";
import { type Settlement, settle } from "./attempt";
import { deliver } from "./delivery";
import { messageHash, standardWebhookHeaders } from "./hash";
import { signingKeys } from "./keys";
import type { ConfirmationJob } from "./message";

// What goes on the WEBHOOKS queue for one notification message: only its uuid (the outbox row
// holds the message) and its subscription.
export type NotificationJob = {
	kind: "notification";
	message: string;
	subscription: string;
	// As in ConfirmationJob.
	after?: number;
	since?: number;
};

export type WebhookJob = ConfirmationJob | NotificationJob;

// Keys in the contract's order (section 13); the hash covers exactly this object. Every part was
// fixed when the row was written, so every attempt sends the same message.
export function notificationMessage(row: OutboxRow) {
	return {
		type: "Notification",
		trigger: row.trigger,
		message: row.message,
		twin: row.twin,
		event: JSON.parse(row.event) as Record<string, unknown>,
		sent_ts: row.sent_ts,
		subscription: JSON.parse(row.subscription_view) as Record<string, unknown>,
	};
}

// One delivery attempt of a notification, signed with the subscription's current keys and
// recorded in its deliveries. It never changes the subscription's status.
export async function attemptNotification(env: Env, job: NotificationJob, attempt: number): Promise<Settlement> {
	const db = database(env.DB);
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
		const outcome = { kind: "permanent", detail, status: null, durationMs: 0, retryAfter: null } as const;
		return settle(db, { subscription: subscription.uuid, message: job.message, attempt, at, since: job.since, confirmation: false }, outcome);
	}

	const keys = await signingKeys(env, subscription, at);
	const content = notificationMessage(row);
	const body = JSON.stringify({ ...content, hash: keys[0] ? messageHash(content, keys[0]) : null });
	const headers = await standardWebhookHeaders(row.message, Math.floor(at), body, keys);
	const outcome = await deliver(subscription.callback_url, body, headers);
	if (outcome.kind === "delivered") await markDelivered(db, row.message, at);
	return settle(db, { subscription: subscription.uuid, message: row.message, attempt, at, since: job.since, confirmation: false }, outcome);
}

import { effectiveStatus, type SubscriptionRow } from "../db/subscriptions";
import { now } from "../base/time";
import type { OutboxRow } from "../db/outbox";
import { publicOrigin } from "../base/origin";

// The "subscription" dictionary of the interface, in answers and messages alike.
export function subscriptionView(row: SubscriptionRow, at = now()) {
	return {
		uuid: row.uuid,
		topic: row.topic,
		account: row.publisher,
		status: effectiveStatus(row, at),
		validity_ts: row.validity_ts,
	};
}

// Keys in the interface's order: the hash covers exactly this object, serialized compactly.
export function confirmationMessage(row: SubscriptionRow, confirmation_url: string, sent_ts: number) {
	return {
		type: "Confirmation",
		message: row.message,
		sent_ts,
		confirmation_url,
		subscription: subscriptionView(row),
	};
}

// Keys in the documented order (docs/notifications.md); the hash covers exactly this object. Every part was
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

export function tokenUrl(env: Env, account: string, token: string) {
	return `${publicOrigin(env)}/notifications/webhooks/${account}?token=${token}`;
}

import { effectiveStatus, type SubscriptionRow } from "../db/subscriptions";
import { now } from "../base/time";

// What goes on the WEBHOOKS queue for one confirmation: no secret travels with it. The consumer
// reads the subscription, opens its sealed token and keys, and signs at delivery time. The
// message uuid is fixed here, so every attempt carries the same one; a job whose message is no
// longer the subscription's (a resend replaced it) is stale and sends nothing.
export type ConfirmationJob = {
	kind: "confirmation";
	subscription: string;
	message: string;
	// Attempts made before this job was queued (a slow attempt's follow-up); absent means none.
	after?: number;
	// When the message was first queued: its retry window starts here. A follow-up keeps it.
	since?: number;
};

// The "subscription" dictionary of the interface, in answers and messages alike.
export function subscriptionView(row: SubscriptionRow, at = now()) {
	return { uuid: row.uuid, topic: row.topic, account: row.publisher, status: effectiveStatus(row, at), validity_ts: row.validity_ts };
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

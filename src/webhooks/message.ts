import type { subscriptions } from "../db/schema";

type SubscriptionRow = typeof subscriptions.$inferSelect;

// What goes on the WEBHOOKS queue for one confirmation. The message uuid is fixed here, so
// every delivery attempt carries the same one. The signing key travels with the job and is
// not stored anywhere else.
export type ConfirmationJob = {
	kind: "confirmation";
	subscription: string;
	message: string;
	confirmation_url: string;
	client_secret: string | null;
	server_secret: string | null;
};

// The "subscription" dictionary of the interface, in answers and messages alike.
export function subscriptionView(row: SubscriptionRow) {
	return { uuid: row.uuid, topic: row.topic, account: row.account, status: row.status, validity_ts: row.validity_ts };
}

// Keys in the interface's order: the hash covers exactly this object, serialized compactly.
export function confirmationMessage(job: ConfirmationJob, row: SubscriptionRow, sent_ts: number) {
	return {
		type: "Confirmation",
		message: job.message,
		sent_ts,
		confirmation_url: job.confirmation_url,
		subscription: subscriptionView(row),
	};
}

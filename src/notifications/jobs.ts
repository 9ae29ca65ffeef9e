// What goes on the WEBHOOKS queue for one confirmation: no secret travels with it. The consumer
// reads the subscription, opens its sealed token and keys, and signs at delivery time. The
// message uuid is fixed here, so every attempt carries the same one; a job whose message is no
// longer the subscription's (a resend replaced it) is stale and sends nothing.
export type ConfirmationJob = {
	kind: "confirmation";
	subscription: string;
	message: string;
	// Attempts made before this job was queued: a job a delivery object from before handed back
	// to the queue (delivery-object.ts); absent means none. Its object counts on from there.
	after?: number;
	// When the message was first queued: its retry window starts here. A follow-up keeps it.
	since?: number;
};

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

import { database } from "../db/client";
import { homeDatabase } from "../db/shards";
import { findSubscription, markFailed } from "../db/subscriptions";
import { now } from "../base/time";
import { RETRY_SCHEDULE } from "./retry-schedule";
import type { WebhookJob } from "./jobs";

export const DEAD_LETTER_QUEUE = "twin-webhooks-dlq";

// Each message is attempted in its own delivery object (delivery-object.ts), all of the
// batch at once, and acknowledged, retried or dead-lettered on its own: the queue owns every
// retry, the object numbers the attempts and says what comes next. An attempt that takes longer
// than the hand-over time goes on in its object, and the message comes back for its settlement,
// so a hanging receiver holds neither its batch nor the batches behind it.
export async function consumeWebhookJobs(batch: MessageBatch<WebhookJob>, env: Env) {
	await Promise.all(
		batch.messages.map(async (message) => {
			try {
				const settlement = await env.DELIVERIES.getByName(message.body.message).run(message.body);
				if (settlement.action === "done") return message.ack();
				if (settlement.action === "retry") return message.retry({ delaySeconds: settlement.delay });
				await env.WEBHOOK_DEAD_LETTERS.send(message.body);
				message.ack();
			} catch (error) {
				// The object could not be reached: the message comes back on the schedule's first delay.
				console.error(JSON.stringify({ queue: batch.queue, message: message.id, error: String(error) }));
				message.retry({ delaySeconds: RETRY_SCHEDULE[0] });
			}
		}),
	);
}

// What ran out of retries arrives here; for a confirmation the subscription says so, with the
// last outcome. A notification's last attempt is already in its deliveries, and it fails no
// subscription.
export async function consumeDeadLetters(batch: MessageBatch<WebhookJob>, env: Env) {
	for (const message of batch.messages) {
		// The subscription's rows are in its publisher's database, which its id names.
		const db = database(homeDatabase(env, message.body.subscription));
		if (message.body.kind === "notification") {
			message.ack();
			continue;
		}
		const row = await findSubscription(db, message.body.subscription);
		const last = row?.last_outcome ? ` (last attempt: ${row.last_outcome})` : "";
		await markFailed(
			db,
			message.body.subscription,
			message.body.message,
			`retries exhausted: the confirmation was not delivered${last}`,
			now(),
		);
		message.ack();
	}
}

import { database } from "../db/client";
import { findSubscription, markFailed, patchSubscription, recordAttempt } from "../db/subscriptions";
import { now } from "../base/time";
import { backoffSeconds, deliver } from "./delivery";
import { messageHash, signingKey, standardWebhookHeaders } from "./hash";
import { type ConfirmationJob, confirmationMessage } from "./message";

export const DEAD_LETTER_QUEUE = "twin-webhooks-dlq";

// Each message is acknowledged or retried on its own, so one slow or failing receiver does
// not hold back the others in its batch.
export async function consumeConfirmations(batch: MessageBatch<ConfirmationJob>, env: Env) {
	const db = database(env.DB);
	await Promise.all(
		batch.messages.map(async (message) => {
			try {
				await handle(db, message);
			} catch (error) {
				console.error(JSON.stringify({ queue: batch.queue, message: message.id, error: String(error) }));
				message.retry({ delaySeconds: backoffSeconds(message.attempts) });
			}
		}),
	);
}

async function handle(db: ReturnType<typeof database>, message: Message<ConfirmationJob>) {
	const job = message.body;
	const row = await findSubscription(db, job.subscription);
	// Delivered before (a message can arrive twice), confirmed, unsubscribed, expired or failed
	// already: there is nothing left to deliver.
	if (!row || row.status !== "pending" || row.delivered_ts !== null) return message.ack();

	const at = now();
	if (row.validity_ts <= at) {
		await patchSubscription(db, row.uuid, { status: "expired" }, at);
		return message.ack();
	}

	const key = job.client_secret && job.server_secret ? signingKey(job.client_secret, job.server_secret) : null;
	const content = confirmationMessage(job, row, at);
	const body = JSON.stringify({ ...content, hash: key ? messageHash(content, key) : null });
	const headers = await standardWebhookHeaders(job.message, Math.floor(at), body, key);
	const outcome = await deliver(row.callback_url, body, headers);

	const suffix = { delivered: "", permanent: ", not retried", retry: ", will retry" }[outcome.kind];
	await recordAttempt(db, row.uuid, { kind: outcome.kind, text: `attempt ${message.attempts}: ${outcome.detail}${suffix}` }, now());
	if (outcome.kind === "retry") return message.retry({ delaySeconds: backoffSeconds(message.attempts) });
	message.ack();
}

// What ran out of retries arrives here; the subscription says so.
export async function consumeDeadLetters(batch: MessageBatch<ConfirmationJob>, env: Env) {
	const db = database(env.DB);
	for (const message of batch.messages) {
		await markFailed(db, message.body.subscription, "retries exhausted: the confirmation was not delivered", now());
		message.ack();
	}
}

import { randomBase64Url, sha256Hex } from "../base/crypto";
import { now } from "../base/time";
import type { SubscriptionRow } from "../db/subscriptions";
import type { ConfirmationJob } from "../notifications/jobs";
import { seal } from "../base/seal";
import { publicOrigin } from "../base/origin";
import type { Context } from "./operation";

// A new confirmation for a subscription: a new message uuid and a new token (at least 128
// bits; 256 here), kept hashed to find the row and sealed to build the URL at delivery time.
// Refused (500102) before anything is written when PUBLIC_URL or WEBHOOK_KEY is missing.
export async function newConfirmation(env: Env, subscription: string) {
	publicOrigin(env);
	const token = randomBase64Url(32);
	return {
		message: crypto.randomUUID(),
		token_hash: await sha256Hex(token),
		sealed_token: await seal(env, subscription, "token", token),
	};
}

// Puts the confirmation of `row` on the queue; if the queue refuses it, `undo` takes back what
// the request wrote, so no subscription waits for a message that will never come.
export async function queueConfirmation(ctx: Context, row: SubscriptionRow, undo: () => Promise<unknown>) {
	const job: ConfirmationJob = { kind: "confirmation", subscription: row.uuid, message: row.message, since: now() };
	try {
		await ctx.env.WEBHOOKS.send(job);
	} catch (error) {
		await undo();
		throw error;
	}
}

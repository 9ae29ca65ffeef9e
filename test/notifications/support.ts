import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { type Account, call } from "../helpers";
import { pathOf, type Received, received, receiver, subscribeRecording } from "../webhooks/support";

export const CLIENT_SECRET = "Client-secret_16";

// A subscription to `topic` whose callback is the test receiver under `id`, confirmed with the
// token of its (recorded, not delivered) confirmation message.
export async function confirmedSubscription(admin: Account, topic: string, id: string, extra: Record<string, unknown> = {}) {
	const { res, url } = await subscribeRecording(admin, { topic, callback_url: `${receiver()}/r/${id}/ok`, ...extra });
	const confirmed = await call("GET", pathOf(url));
	expect(confirmed.status).toBe(200);
	return { uuid: res.body.subscription.uuid as string, serverSecret: res.body.server_secret as string | undefined, url };
}

// The messages the receiver got for `id`, once there are at least `count` of them.
export async function messagesFor(id: string, count = 1): Promise<Received[]> {
	for (let i = 0; i < 150; i++) {
		const log = await received(id);
		if (log.length >= count) return log;
		await new Promise((resolve) => setTimeout(resolve, 100));
	}
	throw new Error(`fewer than ${count} messages for ${id}`);
}

export const bodies = (log: Received[]) => log.map((m) => JSON.parse(m.body));

// The outbox rows of a subscription: what was published to it, delivered or not.
export async function outboxOf(subscription: string) {
	const { results } = await env.DB.prepare("SELECT * FROM notification_outbox WHERE subscription = ? ORDER BY sent_ts").bind(subscription).all();
	return results as Record<string, unknown>[];
}

// Webhook subscriptions and the test receiver (test/webhooks/receiver.ts, started by the global
// setup): subscriptions whose confirmation job is recorded instead of queued, the queue's consumer
// run on a job attempt by attempt, and what the receiver and the outbox got. The notification,
// log, stream and reliability tests subscribe through these as the webhook tests do.
import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, inject, vi } from "vitest";
import worker from "../../src/index";
import { open } from "../../src/base/seal";
import type { ConfirmationJob } from "../../src/notifications/jobs";
import { tokenUrl } from "../../src/notifications/messages";
import type { Account } from "./accounts";
import { call } from "./requests";
import { dbOf } from "./shards";
import { until } from "./waiting";

export const CLIENT_SECRET = "Client-secret_16";

export const receiver = () => `http://127.0.0.1:${inject("receiverPort")}`;

export type Received = { path: string; headers: Record<string, string>; body: string; at: number };

// What the receiver got for `id` so far.
export async function received(id: string): Promise<Received[]> {
	return (await fetch(`${receiver()}/log/${id}`)).json();
}

// The messages the receiver got for `id`, once there are at least `count` of them.
export async function messagesFor(id: string, count = 1): Promise<Received[]> {
	return until(
		() => received(id),
		(log) => log.length >= count,
		`${count} messages for ${id}`,
	);
}

export const bodies = (log: Received[]) => log.map((m) => JSON.parse(m.body));

export function pathOf(url: string) {
	const u = new URL(url);
	return u.pathname + u.search;
}

// A producer that keeps what it is given, in place of the WEBHOOKS queue.
export function recordingQueue() {
	const jobs: ConfirmationJob[] = [];
	return { jobs, binding: { send: async (job: ConfirmationJob) => void jobs.push(job) } };
}

// Subscribes with a producer that records the queued job instead of sending it, so a test can
// hand it to the real consumer itself, attempt by attempt.
export async function subscribeRecording(
	admin: Account,
	body: Record<string, unknown>,
	headers: Record<string, string> = {},
) {
	const { jobs, binding } = recordingQueue();
	const res = await call("POST", "/notifications/webhooks", {
		secret: admin.secret,
		body: { topic: "twins", ...body },
		headers,
		env: { CALLBACK_POLICY: "any", WEBHOOKS: binding },
	});
	expect(res.status).toBe(201);
	expect(jobs).toHaveLength(1);
	return { res, job: jobs[0], url: await confirmationUrl(res.body.subscription.uuid) };
}

// A subscription to `topic` whose callback is the test receiver under `id`, confirmed with the
// token of its (recorded, not delivered) confirmation message.
export async function confirmedSubscription(
	admin: Account,
	topic: string,
	id: string,
	extra: Record<string, unknown> = {},
	headers: Record<string, string> = {},
) {
	const { res, url } = await subscribeRecording(
		admin,
		{ topic, callback_url: `${receiver()}/r/${id}/ok`, ...extra },
		headers,
	);
	const confirmed = await call("GET", pathOf(url));
	expect(confirmed.status).toBe(200);
	return {
		uuid: res.body.subscription.uuid as string,
		serverSecret: res.body.server_secret as string | undefined,
		url,
	};
}

// The confirmation URL the next message to this subscription will carry, read from its sealed
// token, for tests that manage a subscription without delivering its message first.
export async function confirmationUrl(uuid: string) {
	const row = await storedSubscription(uuid);
	return tokenUrl(env, row?.publisher as string, await open(env, uuid, "token", row?.sealed_token as string));
}

// Runs the Worker's queue handler on one message, as the queue would on its `attempts`-th try.
export async function consume(job: ConfirmationJob, attempts = 1, queueName = "twin-webhooks") {
	const batch = createMessageBatch<ConfirmationJob>(queueName, [
		{ id: `m-${attempts}-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body: job },
	]);
	const ctx = createExecutionContext();
	// The queue result does not keep retry delays; a spy on the message does.
	const retry = vi.spyOn(batch.messages[0], "retry");
	const queue = worker.queue as ExportedHandlerQueueHandler<Env, ConfirmationJob>;
	await queue(batch, env, ctx);
	const result = await getQueueResult(batch, ctx);
	return { ...result, retryDelays: retry.mock.calls.map(([options]) => options?.delaySeconds) };
}

export async function storedSubscription(uuid: string) {
	return dbOf(uuid).prepare("SELECT * FROM subscriptions WHERE uuid = ?").bind(uuid).first<Record<string, unknown>>();
}

// The outbox rows of a subscription: what was published to it, delivered or not.
export async function outboxOf(subscription: string) {
	const { results } = await dbOf(subscription)
		.prepare("SELECT * FROM notification_outbox WHERE subscription = ? ORDER BY sent_ts")
		.bind(subscription)
		.all();
	return results as Record<string, unknown>[];
}

import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, inject, vi } from "vitest";
import worker from "../../src/index";
import type { ConfirmationJob } from "../../src/notifications/jobs";
import { open } from "../../src/base/seal";
import { tokenUrl } from "../../src/notifications/messages";
import { type Account, call } from "../helpers";

export const receiver = () => `http://127.0.0.1:${inject("receiverPort")}`;

export type Received = { path: string; headers: Record<string, string>; body: string; at: number };

export async function received(id: string): Promise<Received[]> {
	return (await fetch(`${receiver()}/log/${id}`)).json();
}

// Subscribes with a producer that records the queued job instead of sending it, so a test can
// hand it to the real consumer itself, attempt by attempt.
// A producer that keeps what it is given, in place of the WEBHOOKS queue.
export function recordingQueue() {
	const jobs: ConfirmationJob[] = [];
	return { jobs, binding: { send: async (job: ConfirmationJob) => void jobs.push(job) } };
}

export async function subscribeRecording(admin: Account, body: Record<string, unknown>) {
	const { jobs, binding } = recordingQueue();
	const res = await call("POST", "/notifications/webhooks", {
		secret: admin.secret,
		body: { topic: "twins", ...body },
		env: { CALLBACK_POLICY: "any", WEBHOOKS: binding },
	});
	expect(res.status).toBe(201);
	expect(jobs).toHaveLength(1);
	return { res, job: jobs[0], url: await confirmationUrl(res.body.subscription.uuid) };
}

// The confirmation URL the next message to this subscription will carry, read from its sealed
// token, for tests that manage a subscription without delivering its message first.
export async function confirmationUrl(uuid: string) {
	const row = await storedSubscription(uuid);
	return tokenUrl(env, row?.publisher as string, await open(env, uuid, "token", row?.sealed_token as string));
}

// Runs the Worker's queue handler on one message, as the queue would on its `attempts`-th try.
export async function consume(job: ConfirmationJob, attempts = 1, queueName = "twin-webhooks") {
	const batch = createMessageBatch<ConfirmationJob>(queueName, [{ id: `m-${attempts}-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body: job }]);
	const ctx = createExecutionContext();
	// The queue result does not keep retry delays; a spy on the message does.
	const retry = vi.spyOn(batch.messages[0], "retry");
	const queue = worker.queue as ExportedHandlerQueueHandler<Env, ConfirmationJob>;
	await queue(batch, env, ctx);
	const result = await getQueueResult(batch, ctx);
	return { ...result, retryDelays: retry.mock.calls.map(([options]) => options?.delaySeconds) };
}

export async function storedSubscription(uuid: string) {
	return env.DB.prepare("SELECT * FROM subscriptions WHERE uuid = ?").bind(uuid).first<Record<string, unknown>>();
}

export function pathOf(url: string) {
	const u = new URL(url);
	return u.pathname + u.search;
}

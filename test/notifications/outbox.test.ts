import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AccountDO } from "../../src/objects";
import type { ConfirmationJob, NotificationJob } from "../../src/notifications/jobs";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries } from "../support/ledgers";
import { loggedErrors } from "../support/faults";
import { inImplementation, fireAccountAlarm } from "../support/objects";
import { confirmedSubscription, consume, messagesFor, outboxOf, received } from "../support/webhooks";
import { dbOf } from "../support/shards";

// The account's object with another WEBHOOKS producer in place of the queue, standing for the
// queue failing (or being watched) between the committed write and the hand-over.
async function withQueue(account: string, queue: Partial<Queue>) {
	const stub = env.ACCOUNTS.getByName(account);
	await inImplementation(stub, (instance) => {
		(instance as unknown as { env: Env }).env = { ...env, WEBHOOKS: queue as Queue };
	});
	return stub;
}

describe("the outbox between a committed write and the queue", () => {
	it("keeps what the queue refused, and the alarm sends it later", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "events", id);
		const stub = await withQueue(admin.account, {
			sendBatch: async () => {
				throw new Error("the queue is down");
			},
		});

		// The write commits and answers; its message waits in the outbox.
		await addEntries(admin.secret, twin, { level: { value: 1, publish: { events: "true" } } });
		const [row] = await outboxOf(sub.uuid);
		expect(row).toMatchObject({ queued_ts: null, delivered_ts: null });
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("the queue is down"));
		expect(await received(id)).toEqual([]);
		const alarm = await runInDurableObject(stub, (_instance: AccountDO, state) => state.storage.getAlarm());
		expect(alarm).not.toBeNull();

		await inImplementation(stub, (instance) => {
			(instance as unknown as { env: Env }).env = env;
		});
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		const [delivery] = await messagesFor(id);
		expect(delivery.headers["webhook-id"]).toBe(row.message);
		expect(JSON.parse(delivery.body)).toMatchObject({
			message: row.message,
			event: { level: { new_value: 1, old_value: null } },
		});
		expect((await outboxOf(sub.uuid))[0].queued_ts).not.toBeNull();
	});

	it("shares the account's one alarm with the cursor sweep: the drain comes first, the sweep stays due", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await newTwin(admin.secret);
		const id = crypto.randomUUID();
		await confirmedSubscription(admin, "events", id);
		const stub = env.ACCOUNTS.getByName(admin.account);
		const alarm = () => runInDurableObject(stub, (_instance: AccountDO, state) => state.storage.getAlarm());
		// A scan cursor sets the alarm for its sweep, a day ahead.
		const page = await call("GET", "/twins?count=1", { secret: admin.secret });
		expect(page.body.cursor).toEqual(expect.any(String));
		const sweep = (await alarm()) as number;
		expect(sweep).toBeGreaterThan(Date.now() + 3_600_000);

		await withQueue(admin.account, {
			sendBatch: async () => {
				throw new Error("the queue is down");
			},
		});
		await addEntries(admin.secret, twin, { level: { value: 1, publish: { events: "true" } } });
		const drain = (await alarm()) as number;
		expect(drain).toBeLessThan(sweep);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("the queue is down"));

		await inImplementation(stub, (instance) => {
			(instance as unknown as { env: Env }).env = env;
		});
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		await messagesFor(id);
		// Nothing left to drain: the alarm is the cursor's sweep again.
		expect(await alarm()).toBeGreaterThan(Date.now() + 3_600_000);
	});

	it("sends the same message under the same webhook-id on every attempt, and nothing after delivery", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "events", id);
		await dbOf(sub.uuid)
			.prepare("UPDATE subscriptions SET callback_url = replace(callback_url, '/ok', '/500,ok') WHERE uuid = ?")
			.bind(sub.uuid)
			.run();
		const jobs: NotificationJob[] = [];
		const sendBatch = async (batch: Iterable<MessageSendRequest>) => {
			for (const m of batch) jobs.push(m.body as NotificationJob);
			return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendBatchResponse;
		};
		await withQueue(admin.account, { sendBatch });

		await addEntries(admin.secret, twin, { level: { value: 1, publish: { events: "true" } } });
		expect(jobs).toHaveLength(1);
		const job = jobs[0] as unknown as ConfirmationJob;
		expect((await consume(job, 1)).retryMessages).toHaveLength(1);
		expect((await consume(job, 2)).retryMessages).toHaveLength(0);
		// The job carries when it was queued, which starts its retry window.
		expect(jobs[0].since).toBe((await outboxOf(sub.uuid))[0].queued_ts);
		// A duplicate of the queue message after delivery sends nothing more.
		await consume(job, 2);

		const log = await received(id);
		expect(log).toHaveLength(2);
		expect(log.map((m) => m.headers["webhook-id"])).toEqual([jobs[0].message, jobs[0].message]);
		expect(log[0].body).toBe(log[1].body);
	});

	it("records an attempt that comes after the outbox let its message go, instead of dropping it unseen", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "events", id);
		await addEntries(admin.secret, twin, { level: { value: 1, publish: { events: "true" } } });
		await messagesFor(id);
		const [row] = await outboxOf(sub.uuid);
		// As a drain prunes it, OUTBOX_KEEP_SECONDS after it was queued.
		await dbOf(sub.uuid).prepare("DELETE FROM notification_outbox WHERE message = ?").bind(row.message).run();

		// A fifth attempt of it, arriving from the queue later still.
		const job: NotificationJob = {
			kind: "notification",
			message: row.message as string,
			subscription: sub.uuid,
			after: 4,
		};
		expect(await consume(job as unknown as ConfirmationJob, 1)).toMatchObject({
			retryMessages: [],
			explicitAcks: [expect.any(String)],
		});
		expect(await received(id)).toHaveLength(1);
		const { body } = await call("GET", `/notifications/webhooks/subscriptions/${sub.uuid}/deliveries`, {
			secret: admin.secret,
		});
		expect(body.deliveries[0]).toMatchObject({
			message: row.message,
			attempt: 5,
			outcome: "failed",
			http_status: null,
			detail: expect.stringMatching(/^not sent/),
		});
	});
});

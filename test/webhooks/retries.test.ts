import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { OUTBOX_KEEP_SECONDS } from "../../src/notifications/outbox-drain";
import { RETRY_WINDOW } from "../../src/notifications/retry-schedule";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { clockPast, until } from "../support/waiting";
import { inImplementation } from "../support/objects";
import { WAIT_SECONDS } from "../../src/notifications/delivery-object";
import { failingNetwork } from "../support/faults";
import {
	consume,
	pathOf,
	received,
	receiver,
	recordingQueue,
	storedSubscription,
	subscribeRecording,
} from "../support/webhooks";
import { release } from "./helpers";
import { dbOf } from "../support/shards";

const deliveries = async (secret: string, uuid: string) =>
	(await call("GET", `/notifications/webhooks/subscriptions/${uuid}/deliveries`, { secret })).body.deliveries;

describe("the retry schedule", () => {
	it("spans about a day of queue delays, none over 12 hours, then dead-letters the message", async () => {
		const admin = await bootstrap();
		const { res, job, url } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/503`,
		});
		const delays: number[] = [];
		let attempt = 1;
		for (; attempt <= 20; attempt++) {
			const result = await consume(job, attempt);
			if (result.retryMessages.length === 0) break;
			delays.push(...(result.retryDelays as number[]));
		}
		const total = delays.reduce((a, b) => a + b, 0);
		expect(total / 3600).toBeGreaterThan(20);
		expect(total / 3600).toBeLessThan(30);
		expect(Math.max(...delays)).toBeLessThanOrEqual(43_200);
		expect(delays).toEqual([...delays].sort((a, b) => a - b));

		// The attempt after the last delay is not retried: it goes to the dead-letter queue,
		// whose consumer fails the subscription with the reason.
		const uuid = res.body.subscription.uuid;
		expect(await storedSubscription(uuid)).toMatchObject({ status: "pending", attempts: delays.length + 1 });
		const [last] = await deliveries(admin.secret, uuid);
		expect(last).toMatchObject({
			attempt: delays.length + 1,
			outcome: "failed",
			next_attempt_ts: null,
			detail: expect.stringContaining("retries exhausted"),
		});
		expect((await consume(job, 1, "twin-webhooks-dlq")).explicitAcks).toHaveLength(1);
		expect(await storedSubscription(uuid)).toMatchObject({
			status: "failed",
			failure_reason: expect.stringMatching(/retries exhausted.*HTTP 503/),
		});

		// Failed is final for its token (item 1): confirm, refresh and unsubscribe answer 409.
		expectError(await call("GET", pathOf(url)), 409, 409106);
		expectError(await call("PATCH", pathOf(url), { body: {} }), 409, 409106);
		expectError(await call("DELETE", pathOf(url)), 409, 409106);
		expect(await storedSubscription(uuid)).toMatchObject({ status: "failed" });
	}, 60_000);

	it("counts the attempts of a message the delivery object requeued", async () => {
		const admin = await bootstrap();
		const { job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${crypto.randomUUID()}/503` });
		// Four attempts before it, this is the fifth: its delay is the fifth of the schedule.
		expect((await consume({ ...job, after: 4 }, 1)).retryDelays).toEqual([1800]);
		expect((await consume({ ...job, after: 4 }, 2)).retryDelays).toEqual([3600]);
	});

	it.each([
		["seconds", "503~3600", 3600],
		["an HTTP date", "429~d7200", 7200],
		["more than 12 hours, capped", "503~100000", 43_200],
		["less than the schedule, which wins", "503~1", 5],
	])("honours Retry-After in %s", async (_case, script, expected) => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/${script}`,
		});
		const [delay] = (await consume(job, 1)).retryDelays as number[];
		expect(Math.abs(delay - expected)).toBeLessThanOrEqual(2);
		const [entry] = await deliveries(admin.secret, res.body.subscription.uuid);
		expect(Math.abs(entry.next_attempt_ts - entry.attempted_ts - expected)).toBeLessThanOrEqual(3);
	});

	it("honours Retry-After only up to the end of the day's window, then dead-letters the message", async () => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/503~43200`,
		});
		// Each attempt as if made when the delays before it were over: the job queued that much earlier.
		const delays: number[] = [];
		const elapsed = () => delays.reduce((a, b) => a + b, 0);
		for (let attempt = 1; attempt <= 20; attempt++) {
			const result = await consume({ ...job, since: (job.since as number) - elapsed() }, attempt);
			if (result.retryMessages.length === 0) break;
			delays.push(...(result.retryDelays as number[]));
		}
		// 12 hours, then what is left of the day: the last attempt comes at the window's end.
		expect(delays).toHaveLength(2);
		expect(delays[0]).toBe(43_200);
		expect(RETRY_WINDOW - elapsed()).toBeLessThanOrEqual(1);
		expect(RETRY_WINDOW).toBeLessThanOrEqual(36 * 3600);
		// The outbox keeps a notification's row past the window, for its last attempt to read.
		expect(OUTBOX_KEEP_SECONDS).toBeGreaterThanOrEqual(RETRY_WINDOW + 3600);

		// Recorded as failed and dead-lettered, as after the last delay of the schedule.
		const uuid = res.body.subscription.uuid;
		const [last] = await deliveries(admin.secret, uuid);
		expect(last).toMatchObject({
			attempt: 3,
			outcome: "failed",
			next_attempt_ts: null,
			detail: "HTTP 503, retries exhausted (the retry window is over)",
		});
		expect((await consume(job, 1, "twin-webhooks-dlq")).explicitAcks).toHaveLength(1);
		expect(await storedSubscription(uuid)).toMatchObject({
			status: "failed",
			failure_reason: expect.stringMatching(/retries exhausted.*HTTP 503/),
		});
	});
});

describe("the delivery record", () => {
	it("keeps every attempt with time, outcome, status, duration and next attempt, newest first", async () => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/500,ok`,
		});
		await consume(job, 1);
		await consume(job, 2);
		const list = await deliveries(admin.secret, res.body.subscription.uuid);
		expect(list).toEqual([
			{
				message: job.message,
				attempt: 2,
				attempted_ts: expect.any(Number),
				outcome: "delivered",
				http_status: 200,
				duration_ms: expect.any(Number),
				next_attempt_ts: null,
				detail: "HTTP 200",
			},
			{
				message: job.message,
				attempt: 1,
				attempted_ts: expect.any(Number),
				outcome: "retry",
				http_status: 500,
				duration_ms: expect.any(Number),
				next_attempt_ts: expect.any(Number),
				detail: "HTTP 500, retry in 5 s",
			},
		]);
		expect(list[1].next_attempt_ts - list[1].attempted_ts).toBeGreaterThanOrEqual(5);
	});

	it("keeps only the newest 100 attempts of a subscription", async () => {
		const admin = await bootstrap();
		const callback = `${receiver()}/r/${crypto.randomUUID()}/ok`;
		failingNetwork(callback, "lost");
		const { res, job } = await subscribeRecording(admin, { callback_url: callback });
		const uuid = res.body.subscription.uuid;
		const db = dbOf(uuid);
		await db.batch(
			Array.from({ length: 100 }, (_, i) =>
				db
					.prepare(
						"INSERT INTO webhook_deliveries (subscription, message, attempt, attempted_ts, outcome, http_status, duration_ms, next_attempt_ts, detail) VALUES (?, ?, ?, ?, 'retry', 500, 1, NULL, 'old')",
					)
					.bind(uuid, job.message, i + 1, i + 1),
			),
		);
		await consume(job, 1);
		const list = await deliveries(admin.secret, uuid);
		expect(list).toHaveLength(100);
		expect(list[0].detail).toMatch(/network error/);
		expect(list.at(-1).attempted_ts).toBe(2);
		const { count } = (await db
			.prepare("SELECT count(*) AS count FROM webhook_deliveries WHERE subscription = ?")
			.bind(uuid)
			.first()) as { count: number };
		expect(count).toBe(100);
	});
});

describe("a hanging receiver", () => {
	it("goes on in its delivery object while the queue retries the message, whose next delivery takes the settlement", {
		timeout: 40_000,
	}, async () => {
		const admin = await bootstrap();
		// The first attempt gets no answer; the second reaches the receiver.
		const callback = `${receiver()}/r/${crypto.randomUUID()}/ok`;
		failingNetwork(callback, "hang", 1);
		const { res, job } = await subscribeRecording(admin, { callback_url: callback });
		// The consumer stops waiting long before the 10-second timeout: the queue owns the message
		// and brings it back once the attempt has had time to end.
		expect(await consume(job)).toMatchObject({ explicitAcks: [], retryDelays: [WAIT_SECONDS] });
		const uuid = res.body.subscription.uuid;
		expect(await storedSubscription(uuid)).toMatchObject({ attempts: 0 });
		// The object records the attempt when its 10 seconds are up, on its own: nothing to await.
		const list = await until(
			() => deliveries(admin.secret, uuid),
			(found) => found.length > 0,
			"the timed-out attempt's record",
			30_000,
		);
		expect(list).toEqual([
			expect.objectContaining({
				attempt: 1,
				outcome: "retry",
				http_status: null,
				detail: "no answer within 10 s, retry in 5 s",
			}),
		]);
		expect(await storedSubscription(uuid)).toMatchObject({ status: "pending", attempts: 1 });
		// The queue's next delivery takes that settlement: before its 5 s are up, it waits the rest;
		// after, it makes attempt 2 in the same object, which delivers.
		const early = await consume(job, 2);
		expect(early.explicitAcks).toEqual([]);
		expect(early.retryDelays[0]).toBeGreaterThanOrEqual(1);
		expect(early.retryDelays[0]).toBeLessThanOrEqual(5);
		await clockPast(list[0].next_attempt_ts);
		expect(await consume(job, 3)).toMatchObject({ retryMessages: [], explicitAcks: [expect.any(String)] });
		expect(
			(await deliveries(admin.secret, uuid)).map((d: { attempt: number; outcome: string }) => [d.attempt, d.outcome]),
		).toEqual([
			[2, "delivered"],
			[1, "retry"],
		]);
	});

	it("does not delay another subscription's confirmation sent through the real queue", {
		timeout: 60_000,
	}, async () => {
		const admin = await bootstrap();
		const subscribe = (callback_url: string) =>
			call("POST", "/notifications/webhooks", {
				secret: admin.secret,
				body: { topic: "abc", callback_url },
				env: { CALLBACK_POLICY: "any" },
			});
		const hanging = crypto.randomUUID();
		const healthy = crypto.randomUUID();
		const first = await subscribe(`${receiver()}/r/${hanging}/hang`);
		// The hanging receiver has its request: the batch that carried it is being consumed.
		// Both go through the real queue, which a test cannot await: the receiver's log is polled.
		await until(
			() => received(hanging),
			(log) => log.length > 0,
			"the hanging receiver's request",
			10_000,
		);
		expect(await received(hanging)).toHaveLength(1);
		await subscribe(`${receiver()}/r/${healthy}/ok`);
		await until(
			() => received(healthy),
			(log) => log.length > 0,
			"the healthy receiver's confirmation",
			10_000,
		);
		expect(await received(healthy)).toHaveLength(1);
		// The healthy one arrived while the hanging attempt was still waiting for its answer:
		// nothing has been recorded of it yet.
		expect(await storedSubscription(first.body.subscription.uuid)).toMatchObject({ attempts: 0 });
		// Then the receiver answers it, and its object records the delivery: nothing of the
		// attempt is left to time out after the test.
		await release(hanging);
		await until(
			() => storedSubscription(first.body.subscription.uuid),
			(row) => row?.delivered_ts !== null,
			"the released attempt's record",
		);
	});
});

describe("a delivery object that went away mid-attempt", () => {
	it("counts the lost attempt, and makes the next one on the queue's next delivery", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/ok` });
		// What the object keeps once it has started attempt 3, without the attempt itself.
		const stub = env.DELIVERIES.getByName(job.message);
		await runInDurableObject(stub, (_instance, state) => state.storage.put("state", { made: 3 }));
		expect(await consume(job, 4)).toMatchObject({ retryMessages: [], explicitAcks: [expect.any(String)] });
		expect(await received(id)).toHaveLength(1);
		expect(await deliveries(admin.secret, res.body.subscription.uuid)).toEqual([
			expect.objectContaining({ attempt: 4, outcome: "delivered" }),
		]);
	});

	it("hands an attempt an object from before had taken over back to the queue, from its alarm", async () => {
		const admin = await bootstrap();
		const { job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${crypto.randomUUID()}/ok` });
		const stub = env.DELIVERIES.getByName(job.message);
		const queue = recordingQueue();
		await inImplementation(stub, (instance) => {
			(instance as unknown as { env: Env }).env = { ...env, WEBHOOKS: queue.binding as unknown as Queue };
		});
		await runInDurableObject(stub, async (_instance, state) => {
			await state.storage.put("pending", { job, attempt: 3 });
			await state.storage.setAlarm(Date.now() + 60_000);
		});
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		// Two attempts came before the one it had taken over: the queue makes that one again.
		expect(queue.jobs).toEqual([{ ...job, after: 2 }]);
		expect(await runInDurableObject(stub, (_instance, state) => state.storage.get("pending"))).toBeUndefined();
		await inImplementation(stub, (instance) => {
			(instance as unknown as { env: Env }).env = env;
		});
	});
});

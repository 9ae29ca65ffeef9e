import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWith } from "../support/accounts";
import { loggedErrors } from "../support/faults";
import {
	confirmationUrl,
	consume,
	pathOf,
	received,
	receiver,
	recordingQueue,
	storedSubscription,
	subscribeRecording,
} from "../support/webhooks";
import { dbOf } from "../support/shards";

const base = "/notifications/webhooks/subscriptions";

describe("get_webhook_subscriptions", () => {
	it("lists the caller's account's subscriptions, filtered by topic and status", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const a = await subscribeRecording(admin, { topic: "alpha", callback_url: `${receiver()}/r/a/ok` });
		const b = await subscribeRecording(admin, {
			topic: "beta",
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/404`,
		});
		const c = await subscribeRecording(admin, { topic: "alpha", callback_url: `${receiver()}/r/c/ok` });
		await subscribeRecording(other, { topic: "alpha", callback_url: `${receiver()}/r/o/ok` });
		await call("GET", pathOf(a.url));
		await consume(b.job);
		// Past its validity without anybody having said so yet: listed as expired.
		await dbOf(c.res.body.subscription.uuid)
			.prepare("UPDATE subscriptions SET validity_ts = 1 WHERE uuid = ?")
			.bind(c.res.body.subscription.uuid)
			.run();

		const all = await call("GET", "/notifications/webhooks", { secret: admin.secret });
		expect(all.status).toBe(200);
		expect(all.body.subscriptions).toEqual({
			[a.res.body.subscription.uuid]: {
				topic: "alpha",
				status: "confirmed",
				callback_url: `${receiver()}/r/a/ok`,
				validity_ts: a.res.body.subscription.validity_ts,
				created_ts: expect.any(Number),
				updated_ts: expect.any(Number),
			},
			[b.res.body.subscription.uuid]: expect.objectContaining({ topic: "beta", status: "failed" }),
			[c.res.body.subscription.uuid]: expect.objectContaining({ topic: "alpha", status: "expired" }),
		});
		const ids = async (query: string) =>
			Object.keys(
				(await call("GET", `/notifications/webhooks?${query}`, { secret: admin.secret })).body.subscriptions,
			).sort();
		expect(await ids("topic=alpha")).toEqual([a.res.body.subscription.uuid, c.res.body.subscription.uuid].sort());
		expect(await ids("status=failed")).toEqual([b.res.body.subscription.uuid]);
		expect(await ids("status=expired&topic=alpha")).toEqual([c.res.body.subscription.uuid]);
		expect(await ids("status=confirmed")).toEqual([a.res.body.subscription.uuid]);
		expect(await ids("status=pending")).toEqual([]);
		expectError(await call("GET", "/notifications/webhooks?status=lost", { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", "/notifications/webhooks?topic=a", { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", "/notifications/webhooks?colour=red", { secret: admin.secret }), 400, 400101);
	});

	it("is subject to the permission rule, like every management operation", async () => {
		const admin = await bootstrap();
		const { res } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		const uuid = res.body.subscription.uuid;
		const names = [
			"get_webhook_subscriptions",
			"get_webhook_subscription",
			"get_webhook_deliveries",
			"resend_webhook_confirmation",
			"delete_webhook_subscription",
		];
		const reader = await userWith(admin, { effect: "deny", actions: names });
		for (const [method, path] of [
			["GET", "/notifications/webhooks"],
			["GET", `${base}/${uuid}`],
			["GET", `${base}/${uuid}/deliveries`],
			["POST", `${base}/${uuid}/confirmation`],
			["DELETE", `${base}/${uuid}`],
		]) {
			expectError(await call(method, path, { secret: reader.secret }), 403, 403101);
		}
		expect(await storedSubscription(uuid)).toMatchObject({ status: "pending" });
	});
});

describe("get_webhook_subscription", () => {
	it("answers its fields, callback URL, state, attempts and the reason of a failure", async () => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/410`,
		});
		await consume(job);
		const got = await call("GET", `${base}/${res.body.subscription.uuid}`, { secret: admin.secret });
		expect(got.status).toBe(200);
		expect(got.body).toEqual({
			...res.body.subscription,
			status: "failed",
			callback_url: res.body.callback_url,
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
			attempts: 1,
			last_attempt_ts: expect.any(Number),
			last_outcome: "HTTP 410, not retried",
			delivered_ts: null,
			failure_reason: "HTTP 410, not retried",
		});
	});

	it("answers 404 for an unknown uuid and 400 for a malformed one", async () => {
		const admin = await bootstrap();
		expectError(await call("GET", `${base}/${crypto.randomUUID()}`, { secret: admin.secret }), 404, 404102);
		expectError(await call("GET", `${base}/${crypto.randomUUID()}/deliveries`, { secret: admin.secret }), 404, 404102);
		expectError(await call("GET", `${base}/not-a-uuid`, { secret: admin.secret }), 400, 400101);
	});
});

describe("resend_webhook_confirmation", () => {
	it("gives a failed subscription a new message and token; the old ones are dead", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job, url } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/404,ok` });
		const uuid = res.body.subscription.uuid;
		await consume(job);
		expect(await storedSubscription(uuid)).toMatchObject({ status: "failed" });

		const { jobs, binding } = recordingQueue();
		const resent = await call("POST", `${base}/${uuid}/confirmation`, {
			secret: admin.secret,
			env: { WEBHOOKS: binding },
		});
		expect(resent.status).toBe(200);
		expect(resent.body).toMatchObject({ uuid, status: "pending", attempts: 0, failure_reason: null });
		expect(jobs).toEqual([
			{ kind: "confirmation", subscription: uuid, message: expect.any(String), since: expect.any(Number) },
		]);
		expect(jobs[0].message).not.toBe(job.message);

		// The old job is stale: acknowledged, nothing sent. The new one is delivered.
		expect((await consume(job)).explicitAcks).toHaveLength(1);
		expect(await received(id)).toHaveLength(1);
		await consume(jobs[0]);
		const [, delivery] = await received(id);
		const message = JSON.parse(delivery.body);
		expect(message.message).toBe(jobs[0].message);
		expect(message.confirmation_url).not.toBe(url);
		expectError(await call("GET", pathOf(url)), 404, 404102);
		expect((await call("GET", pathOf(message.confirmation_url))).body.status).toBe("confirmed");
	});

	it("refuses a confirmed subscription (409) and an expired one (400)", async () => {
		const admin = await bootstrap();
		const confirmed = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		await call("GET", pathOf(confirmed.url));
		expectError(
			await call("POST", `${base}/${confirmed.res.body.subscription.uuid}/confirmation`, { secret: admin.secret }),
			409,
			409101,
		);
		const expired = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		await dbOf(expired.res.body.subscription.uuid)
			.prepare("UPDATE subscriptions SET validity_ts = 1 WHERE uuid = ?")
			.bind(expired.res.body.subscription.uuid)
			.run();
		expectError(
			await call("POST", `${base}/${expired.res.body.subscription.uuid}/confirmation`, { secret: admin.secret }),
			400,
			400105,
		);
	});

	it("counts a failed subscription it revives against MAX_SUBSCRIPTIONS", async () => {
		const admin = await bootstrap();
		const failed = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${crypto.randomUUID()}/404` });
		await consume(failed.job);
		await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		const path = `${base}/${failed.res.body.subscription.uuid}/confirmation`;
		// The live one counts one, the failed one's first message one, and the resent one more.
		expectError(await call("POST", path, { secret: admin.secret, env: { MAX_SUBSCRIPTIONS: 2 } }), 409, 409105);
		expect(await storedSubscription(failed.res.body.subscription.uuid)).toMatchObject({ status: "failed" });
		expect(
			(
				await call("POST", path, {
					secret: admin.secret,
					env: { MAX_SUBSCRIPTIONS: 3, WEBHOOKS: recordingQueue().binding },
				})
			).status,
		).toBe(200);
	});

	it("takes the subscription back to failed if the queue refuses the message", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const { res } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		const broken = { send: async () => Promise.reject(new Error("queue unavailable")) };
		const resent = await call("POST", `${base}/${res.body.subscription.uuid}/confirmation`, {
			secret: admin.secret,
			env: { WEBHOOKS: broken },
		});
		expectError(resent, 500, 500101);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("queue unavailable"));
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({
			status: "failed",
			failure_reason: expect.stringContaining("could not be queued"),
		});
	});
});

describe("delete_webhook_subscription", () => {
	it("ends it without the token, drops its secrets, and stays listed as unsubscribed", async () => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/x/ok`,
			client_secret: "Client-secret_16",
		});
		const uuid = res.body.subscription.uuid;
		const url = await confirmationUrl(uuid);
		const gone = await call("DELETE", `${base}/${uuid}`, { secret: admin.secret });
		expect(gone.status).toBe(200);
		expect(gone.body).toMatchObject({ uuid, status: "unsubscribed" });
		expect(await storedSubscription(uuid)).toMatchObject({
			sealed_token: null,
			sealed_key: null,
			sealed_previous_key: null,
		});
		expectError(await call("GET", pathOf(url)), 404, 404102);
		expect((await consume(job)).explicitAcks).toHaveLength(1);
		expect((await call("DELETE", `${base}/${uuid}`, { secret: admin.secret })).body.status).toBe("unsubscribed");
		expect(
			(await call("GET", "/notifications/webhooks?status=unsubscribed", { secret: admin.secret })).body.subscriptions[
				uuid
			],
		).toMatchObject({ status: "unsubscribed" });
	});
});

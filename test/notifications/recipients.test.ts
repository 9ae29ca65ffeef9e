import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { until } from "../support/waiting";
import {
	bodies,
	confirmedSubscription,
	consume,
	messagesFor,
	outboxOf,
	received,
	receiver,
	subscribeRecording,
} from "../support/webhooks";
import { dbOf } from "../support/shards";

describe("who receives a notification", () => {
	it("only subscriptions to the topic that are confirmed and unexpired when it is published", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const [live, pending, ended, expired, other] = Array.from({ length: 5 }, () => crypto.randomUUID());
		const confirmed = await confirmedSubscription(admin, "news", live);
		const waiting = await subscribeRecording(admin, { topic: "news", callback_url: `${receiver()}/r/${pending}/ok` });
		const unsubscribed = await confirmedSubscription(admin, "news", ended);
		expect(
			(await call("DELETE", `/notifications/webhooks/subscriptions/${unsubscribed.uuid}`, { secret: admin.secret }))
				.status,
		).toBe(200);
		const lapsed = await confirmedSubscription(admin, "news", expired);
		await dbOf(lapsed.uuid).prepare("UPDATE subscriptions SET validity_ts = 1 WHERE uuid = ?").bind(lapsed.uuid).run();
		const elsewhere = await confirmedSubscription(admin, "other-news", other);

		await addEntries(admin.secret, twin, { headline: { value: "hello", publish: { news: "true" } } });
		expect(bodies(await messagesFor(live))[0].subscription.uuid).toBe(confirmed.uuid);
		for (const uuid of [waiting.res.body.subscription.uuid, unsubscribed.uuid, lapsed.uuid, elsewhere.uuid]) {
			expect(await outboxOf(uuid)).toEqual([]);
		}
		// Their statuses are as they were: a notification changes none.
		const listed = await call("GET", "/notifications/webhooks?topic=news", { secret: admin.secret });
		expect(
			Object.values(listed.body.subscriptions)
				.map((s) => (s as { status: string }).status)
				.sort(),
		).toEqual(["confirmed", "expired", "pending", "unsubscribed"]);
	});

	it("records outcomes on the subscription without failing it", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "news", id);
		// From now on the receiver refuses with 404, a permanent failure.
		await dbOf(sub.uuid)
			.prepare("UPDATE subscriptions SET callback_url = ? WHERE uuid = ?")
			.bind(`${receiver()}/r/${id}/404`, sub.uuid)
			.run();
		await addEntries(admin.secret, twin, { headline: { value: "hello", publish: { news: "true" } } });
		await messagesFor(id);
		// The attempt is recorded after the receiver answered, still in the real queue's consumer.
		const deliveries: { outcome: string; http_status: number }[] = await until(
			async () =>
				(await call("GET", `/notifications/webhooks/subscriptions/${sub.uuid}/deliveries`, { secret: admin.secret }))
					.body.deliveries,
			(found) => found.length > 0,
			"the attempt's record",
		);
		expect(deliveries[0]).toMatchObject({ outcome: "failed", http_status: 404 });
		const detail = await call("GET", `/notifications/webhooks/subscriptions/${sub.uuid}`, { secret: admin.secret });
		expect(detail.body).toMatchObject({
			status: "confirmed",
			failure_reason: null,
			last_outcome: expect.stringContaining("HTTP 404"),
		});
	});
});

describe("grants of topics to other accounts", () => {
	it("let a granted account subscribe to the topic, and revoking it ends the subscription", async () => {
		const publisher = await bootstrap();
		const subscriber = await bootstrap();
		const twin = await newTwin(publisher.secret);
		const id = crypto.randomUUID();
		const body = { topic: "shared", account: publisher.account, callback_url: `${receiver()}/r/${id}/ok` };

		const refused = await call("POST", "/notifications/webhooks", {
			secret: subscriber.secret,
			body,
			env: { CALLBACK_POLICY: "any" },
		});
		expect(refused.status).toBe(403);
		expect(refused.body.subcode).toBe(403104);

		const access = `/notifications/webhooks/access/accounts/${subscriber.account}`;
		const granted = await call("PATCH", access, {
			secret: publisher.secret,
			body: { topics: ["shared", "shared", "extra"] },
		});
		expect(granted.status).toBe(200);
		expect(granted.body).toEqual({ topics: ["shared", "extra"] });
		const listed = await call("GET", "/notifications/webhooks/access", { secret: publisher.secret });
		expect(listed.body).toEqual({ accounts: { [subscriber.account]: { topics: ["shared", "extra"] } }, cursor: null });

		const sub = await confirmedSubscription(subscriber, "shared", id, { account: publisher.account });
		expect(new URL(sub.url).pathname).toBe(`/notifications/webhooks/${publisher.account}`);
		// Owned by the subscriber: it lists it; the publisher does not.
		expect(
			Object.keys((await call("GET", "/notifications/webhooks", { secret: subscriber.secret })).body.subscriptions),
		).toEqual([sub.uuid]);
		expect((await call("GET", "/notifications/webhooks", { secret: publisher.secret })).body.subscriptions).toEqual({});

		await addEntries(publisher.secret, twin, { level: { value: 1, publish: { shared: "true" } } });
		const [message] = bodies(await messagesFor(id));
		expect(message.subscription).toMatchObject({ uuid: sub.uuid, account: publisher.account, topic: "shared" });

		const revoked = await call("PATCH", access, { secret: publisher.secret, body: { publish: ["extra"] } });
		expect(revoked.body).toEqual({ topics: ["extra"] });
		const after = await call("GET", `/notifications/webhooks/subscriptions/${sub.uuid}`, { secret: subscriber.secret });
		expect(after.body.status).toBe("unsubscribed");
		await call("PATCH", ledger(twin), { secret: publisher.secret, body: { entries: { level: { value: 2 } } } });
		expect(await outboxOf(sub.uuid)).toHaveLength(1);
		expect(await received(id)).toHaveLength(1);

		const none = await call("PATCH", access, { secret: publisher.secret, body: { topics: [] } });
		expect(none.body).toEqual({ topics: [] });
		expect((await call("GET", "/notifications/webhooks/access", { secret: publisher.secret })).body).toEqual({
			accounts: {},
			cursor: null,
		});
	});

	it("ends a failed subscription with the grant too, so a resend cannot bring it back", async () => {
		const publisher = await bootstrap();
		const subscriber = await bootstrap();
		const access = `/notifications/webhooks/access/accounts/${subscriber.account}`;
		expect((await call("PATCH", access, { secret: publisher.secret, body: { topics: ["shared"] } })).status).toBe(200);
		const { res, job } = await subscribeRecording(subscriber, {
			topic: "shared",
			account: publisher.account,
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/404`,
		});
		await consume(job);
		const path = `/notifications/webhooks/subscriptions/${res.body.subscription.uuid}`;
		expect((await call("GET", path, { secret: subscriber.secret })).body.status).toBe("failed");

		expect((await call("PATCH", access, { secret: publisher.secret, body: { topics: [] } })).status).toBe(200);
		expect((await call("GET", path, { secret: subscriber.secret })).body.status).toBe("unsubscribed");
		expect((await call("POST", `${path}/confirmation`, { secret: subscriber.secret })).status).toBe(409);
	});

	it("refuses a role with a twin or entry rule: the grantee's messages would show what that role hides", async () => {
		const publisher = await bootstrap();
		const grantee = await bootstrap();
		const access = `/notifications/webhooks/access/accounts/${grantee.account}`;
		for (const rules of [{ twin: "TWIN.open == true" }, { entry: "entry_name == 'public'" }]) {
			const confined = await userWithRules(publisher, rules);
			for (const topics of [["news"], []]) {
				const res = await call("PATCH", access, { secret: confined.secret, body: { topics } });
				expect(res.status, JSON.stringify({ rules, topics })).toBe(403);
				expect(res.body.subcode).toBe(403102);
			}
		}
		expect((await call("GET", "/notifications/webhooks/access", { secret: publisher.secret })).body.accounts).toEqual(
			{},
		);
		expect((await call("PATCH", access, { secret: publisher.secret, body: { topics: ["news"] } })).status).toBe(200);
	});

	it("refuses the caller's own account, both list names at once, and bad topics", async () => {
		const admin = await bootstrap();
		const own = await call("PATCH", `/notifications/webhooks/access/accounts/${admin.account}`, {
			secret: admin.secret,
			body: { topics: ["abc"] },
		});
		expect(own.body.subcode).toBe(400101);
		const other = `/notifications/webhooks/access/accounts/${crypto.randomUUID()}`;
		for (const body of [
			{ topics: ["abc"], publish: ["abc"] },
			{},
			{ topics: ["x"] },
			{ topics: Array.from({ length: 101 }, (_, i) => `topic-${i}`) },
		]) {
			const res = await call("PATCH", other, { secret: admin.secret, body });
			expect(res.status, JSON.stringify(body)).toBe(400);
		}
		expect(
			(
				await call("PATCH", "/notifications/webhooks/access/accounts/not-a-uuid", {
					secret: admin.secret,
					body: { topics: [] },
				})
			).status,
		).toBe(400);
	});
});

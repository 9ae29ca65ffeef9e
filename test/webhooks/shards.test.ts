import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { homeOf } from "../../src/db/shards";
import { type Account, bootstrapOn, member, role } from "../support/accounts";
import { call, expectError, fingerprint } from "../support/requests";
import { idOf } from "../support/shards";
import { addEntries } from "../support/ledgers";
import { newTwin } from "../support/twins";
import { until } from "../support/waiting";
import {
	bodies,
	confirmedSubscription,
	consume,
	messagesFor,
	pathOf,
	received,
	receiver,
	recordingQueue,
	storedSubscription,
	subscribeRecording,
} from "../support/webhooks";
import { publishEntries } from "../streams/helpers";
import { logLines } from "../log/helpers";

// A subscriber and a publisher whose rows live in different databases (docs/scaling.md): the
// subscription, its deliveries and the grant are kept with the publisher, the subscriber's
// users, roles and log with the subscriber, and every path between them works across the two.

const OTHER = { DB_0: "DB_1", DB_1: "DB_0" } as const;

async function grant(publisher: Account, subscriber: Account, topics: string[]) {
	const res = await call("PATCH", `/notifications/webhooks/access/accounts/${subscriber.account}`, {
		secret: publisher.secret,
		body: { topics },
	});
	expect(res.status).toBe(200);
}

describe.each(["DB_0", "DB_1"] as const)("a subscriber on %s and a publisher on the other database", (home) => {
	it("subscribes to a granted topic, confirms through the delivered message and gets the publisher's writes", async () => {
		const subscriber = await bootstrapOn(home);
		const publisher = await bootstrapOn(OTHER[home]);
		await grant(publisher, subscriber, ["news"]);
		const id = crypto.randomUUID();
		const res = await call("POST", "/notifications/webhooks", {
			secret: subscriber.secret,
			body: { topic: "news", account: publisher.account, callback_url: `${receiver()}/r/${id}/ok` },
			env: { CALLBACK_POLICY: "any" },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		const uuid = res.body.subscription.uuid as string;
		// Kept with its publisher.
		expect(homeOf(env, uuid)).toBe(OTHER[home]);
		expect(await storedSubscription(uuid)).toMatchObject({ account: subscriber.account, publisher: publisher.account });

		const [confirmation] = bodies(await messagesFor(id));
		expect(confirmation).toMatchObject({ type: "Confirmation", subscription: { uuid, account: publisher.account } });
		const confirmed = await call("GET", pathOf(confirmation.confirmation_url));
		expect(confirmed.status).toBe(200);
		expect(confirmed.body.status).toBe("confirmed");

		const twin = await newTwin(publisher.secret);
		await publishEntries(publisher.secret, twin, { level: 3 }, ["news"]);
		const [, notification] = bodies(await messagesFor(id, 2));
		expect(notification).toMatchObject({ twin, event: { level: { new_value: 3 } } });

		// The subscriber manages it by its uuid; the publisher finds nothing there, as for an absent one.
		const path = `/notifications/webhooks/subscriptions/${uuid}`;
		const own = await call("GET", path, { secret: subscriber.secret });
		expect(own.body).toMatchObject({ status: "confirmed", attempts: 1 });
		const deliveries = await call("GET", `${path}/deliveries`, { secret: subscriber.secret });
		expect(deliveries.body.deliveries.map((d: { outcome: string }) => d.outcome)).toEqual(["delivered", "delivered"]);
		const absent = idOf(publisher.account);
		const hidden = await call("GET", path, { secret: publisher.secret });
		expectError(hidden, 404, 404102);
		const missing = await call("GET", `/notifications/webhooks/subscriptions/${absent}`, { secret: publisher.secret });
		expect(fingerprint(hidden)).toEqual(fingerprint(missing));

		const ended = await call("DELETE", path, { secret: subscriber.secret });
		expect(ended.body.status).toBe("unsubscribed");
		expect((await storedSubscription(uuid))?.status).toBe("unsubscribed");
	});

	it("answers 403 for a topic the publisher does not grant, as for an account that grants nothing", async () => {
		const subscriber = await bootstrapOn(home);
		const publisher = await bootstrapOn(OTHER[home]);
		await grant(publisher, subscriber, ["news"]);
		const subscribe = (account: string, topic: string) =>
			call("POST", "/notifications/webhooks", {
				secret: subscriber.secret,
				body: { topic, account, callback_url: "https://example.com/hook" },
			});
		expectError(await subscribe(publisher.account, "weather"), 403, 403104);
		const nobody = await bootstrapOn(OTHER[home]);
		expect(fingerprint(await subscribe(publisher.account, "weather"))).toEqual(
			fingerprint(await subscribe(nobody.account, "weather")),
		);
	});
});

describe("MAX_SUBSCRIPTIONS across databases", () => {
	it("counts the subscriber's subscriptions with publishers on both databases, and its resends", async () => {
		const subscriber = await bootstrapOn("DB_1");
		const near = await bootstrapOn("DB_1");
		const far = await bootstrapOn("DB_0");
		await grant(near, subscriber, ["news"]);
		await grant(far, subscriber, ["news"]);
		const queue = recordingQueue();
		const vars = { WEBHOOKS: queue.binding, MAX_SUBSCRIPTIONS: 4 };
		const subscribe = (account: string) =>
			call("POST", "/notifications/webhooks", {
				secret: subscriber.secret,
				body: { topic: "news", account, callback_url: "https://example.com/hook" },
				env: vars,
			});
		const made = [];
		for (const account of [far.account, far.account, near.account]) {
			const res = await subscribe(account);
			expect(res.status).toBe(201);
			made.push(res.body.subscription.uuid as string);
		}
		expect(made.map((uuid) => homeOf(env, uuid))).toEqual(["DB_0", "DB_0", "DB_1"]);
		// One resend of a subscription on the other database fills the limit.
		const resend = (uuid: string) =>
			call("POST", `/notifications/webhooks/subscriptions/${uuid}/confirmation`, {
				secret: subscriber.secret,
				env: vars,
			});
		expect((await resend(made[0])).status).toBe(200);
		for (const account of [near.account, far.account, subscriber.account])
			expectError(await subscribe(account), 409, 409105);
		expectError(await resend(made[2]), 409, 409105);
		expect(queue.jobs).toHaveLength(4);
		// Another subscriber of the same publishers counts its own.
		const other = await bootstrapOn("DB_0");
		await grant(far, other, ["news"]);
		expect(
			(
				await call("POST", "/notifications/webhooks", {
					secret: other.secret,
					body: { topic: "news", account: far.account, callback_url: "https://example.com/hook" },
					env: { ...vars, MAX_SUBSCRIPTIONS: 1 },
				})
			).status,
		).toBe(201);
	});

	it("lets concurrent subscribes to publishers on both databases pass the limit not once", async () => {
		const subscriber = await bootstrapOn("DB_0");
		const publishers = [await bootstrapOn("DB_0"), await bootstrapOn("DB_1")];
		for (const publisher of publishers) await grant(publisher, subscriber, ["news"]);
		const queue = recordingQueue();
		const answers = await Promise.all(
			Array.from({ length: 8 }, (_, i) =>
				call("POST", "/notifications/webhooks", {
					secret: subscriber.secret,
					body: { topic: "news", account: publishers[i % 2]!.account, callback_url: "https://example.com/hook" },
					env: { WEBHOOKS: queue.binding, MAX_SUBSCRIPTIONS: 3 },
				}),
			),
		);
		expect(answers.filter((res) => res.status === 201)).toHaveLength(3);
		for (const res of answers.filter((res) => res.status !== 201)) expectError(res, 409, 409105);
		expect(queue.jobs).toHaveLength(3);
	});
});

describe("get_webhook_subscriptions across databases", () => {
	it("lists the subscriptions kept on both databases once each, in (created_ts, uuid) order, page by page", async () => {
		const subscriber = await bootstrapOn("DB_0");
		const publisher = await bootstrapOn("DB_1");
		await grant(publisher, subscriber, ["news"]);
		const made: string[] = [];
		for (let i = 0; i < 6; i++) {
			const body = { callback_url: "https://example.com/hook", ...(i % 2 ? { account: publisher.account } : {}) };
			made.push((await subscribeRecording(subscriber, { ...body, topic: "news" })).res.body.subscription.uuid);
		}
		expect(new Set(made.map((uuid) => homeOf(env, uuid)))).toEqual(new Set(["DB_0", "DB_1"]));
		const all = await call("GET", "/notifications/webhooks", { secret: subscriber.secret });
		expect(Object.keys(all.body.subscriptions)).toEqual(made);
		expect(all.body.cursor).toBeNull();

		const walked: string[] = [];
		let cursor: string | null = null;
		do {
			const query: string = `?limit=4${cursor ? `&cursor=${cursor}` : ""}`;
			const page = await call("GET", `/notifications/webhooks${query}`, { secret: subscriber.secret });
			expect(page.status).toBe(200);
			walked.push(...Object.keys(page.body.subscriptions));
			cursor = page.body.cursor;
		} while (cursor !== null);
		expect(walked).toEqual(made);

		// The publisher lists none of them: they are the subscriber's.
		const theirs = await call("GET", "/notifications/webhooks", { secret: publisher.secret });
		expect(theirs.body.subscriptions).toEqual({});
	});
});

describe("a confined subscriber of a publisher on the other database", () => {
	// A user of `subscriber` whose role shows it the twins on site north without their entries
	// named cost*, subscribed to `publisher`'s news.
	async function confinedReader(subscriber: Account, publisher: Account, id: string) {
		await grant(publisher, subscriber, ["news"]);
		const confining = await role(
			subscriber,
			{ effect: "deny", actions: null },
			{ twin: "TWIN.site == 'north'", entry: "entry_name !~ '^cost'" },
		);
		const reader = await member(subscriber, confining);
		const sub = await confirmedSubscription(reader, "news", id, { account: publisher.account });
		return { reader, sub };
	}

	it("gets each message as its own role reads it, its users and roles read in its database", async () => {
		const subscriber = await bootstrapOn("DB_1");
		const publisher = await bootstrapOn("DB_0");
		const id = crypto.randomUUID();
		await confinedReader(subscriber, publisher, id);
		const south = await newTwin(publisher.secret, { site: "south" });
		const north = await newTwin(publisher.secret, { site: "north" });
		// Entries another account may see: visibility "true".
		const entry = (value: number) => ({ value, visibility: "true", publish: { news: "true" } });
		await addEntries(publisher.secret, south, { mileage: entry(4) });
		await addEntries(publisher.secret, north, { mileage: entry(5), cost: entry(7) });
		const [message] = bodies(await messagesFor(id));
		expect(message).toMatchObject({ twin: north, event: { mileage: { new_value: 5 } } });
		expect(Object.keys(message.event)).toEqual(["mileage"]);
		expect(await received(id)).toHaveLength(1);
	});

	it("is unsubscribed with its user: delete_user ends its subscriptions kept on the other database", async () => {
		const subscriber = await bootstrapOn("DB_0");
		const publisher = await bootstrapOn("DB_1");
		const { reader, sub } = await confinedReader(subscriber, publisher, crypto.randomUUID());
		const own = await confirmedSubscription(reader, "news", crypto.randomUUID());
		const admins = await confirmedSubscription(subscriber, "news", crypto.randomUUID(), { account: publisher.account });
		expect(homeOf(env, sub.uuid)).toBe("DB_1");
		expect((await call("DELETE", `/users/${reader.user}`, { secret: subscriber.secret })).status).toBe(200);
		expect(await storedSubscription(sub.uuid)).toMatchObject({ status: "unsubscribed", sealed_key: null });
		expect((await storedSubscription(own.uuid))?.status).toBe("unsubscribed");
		expect((await storedSubscription(admins.uuid))?.status).toBe("confirmed");
	});
});

describe("the subscriber's log across databases", () => {
	const failed = (uuid: string, trigger: string) =>
		new RegExp(`^Webhook delivery failed for good: subscription=\\[${uuid}\\], message=.*, trigger=\\[${trigger}\\]`);

	it("takes the line of a notification that failed for good, not the publisher's", async () => {
		const subscriber = await bootstrapOn("DB_0");
		const publisher = await bootstrapOn("DB_1");
		await grant(publisher, subscriber, ["news"]);
		const sub = await confirmedSubscription(subscriber, "news", crypto.randomUUID(), {
			account: publisher.account,
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/410`,
		});
		const twin = await newTwin(publisher.secret);
		await publishEntries(publisher.secret, twin, { level: 1 }, ["news"]);
		const [line] = await until(
			() => logLines(subscriber.secret),
			(lines) => lines.length > 0,
			"the failure's log line",
		);
		expect(line).toMatch(failed(sub.uuid, "ledger\\.entry\\.added"));
		expect(await logLines(publisher.secret)).toEqual([]);
	});

	it("takes the line of a confirmation refused for good", async () => {
		const subscriber = await bootstrapOn("DB_1");
		const publisher = await bootstrapOn("DB_0");
		await grant(publisher, subscriber, ["news"]);
		const gone = await subscribeRecording(subscriber, {
			topic: "news",
			account: publisher.account,
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/410`,
		});
		await consume(gone.job);
		const uuid = gone.res.body.subscription.uuid as string;
		expect(await storedSubscription(uuid)).toMatchObject({ status: "failed" });
		const lines = await logLines(subscriber.secret);
		expect(lines).toHaveLength(1);
		expect(lines[0]).toMatch(failed(uuid, "Confirmation"));
		expect(await logLines(publisher.secret)).toEqual([]);
	});
});

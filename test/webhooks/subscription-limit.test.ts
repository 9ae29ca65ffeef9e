import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CONFIRMATION_COUNTED_SECONDS, PRUNED_AFTER_SECONDS } from "../../src/db/subscriptions";
import { MAX_SUBSCRIPTIONS_PAGE } from "../../src/operations/webhook-subscriptions";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap } from "../support/accounts";
import { dbOf, idOf } from "../support/shards";
import { clockPast } from "../support/waiting";
import { recordingQueue, storedSubscription } from "../support/webhooks";

// MAX_SUBSCRIPTIONS bounds the confirmation messages an account has the service send: each one
// (subscribe or resend) counts for a day, whatever becomes of its subscription; a live
// subscription counts once at least. get_webhook_subscriptions answers in pages.

const DAY = CONFIRMATION_COUNTED_SECONDS;
const seconds = () => Date.now() / 1000;

// Subscribes through the Worker with a producer that keeps the queued confirmation jobs.
function subscriber(admin: Account, limit?: number) {
	const queue = recordingQueue();
	const vars = { WEBHOOKS: queue.binding, ...(limit === undefined ? {} : { MAX_SUBSCRIPTIONS: limit }) };
	return {
		jobs: queue.jobs,
		subscribe: (body: Record<string, unknown> = {}) =>
			call("POST", "/notifications/webhooks", {
				secret: admin.secret,
				body: { topic: "abc", callback_url: "https://example.com/hook", ...body },
				env: vars,
			}),
		resend: (uuid: string) =>
			call("POST", `/notifications/webhooks/subscriptions/${uuid}/confirmation`, { secret: admin.secret, env: vars }),
	};
}

type Seeded = {
	status?: string;
	validity?: number;
	confirmation?: number;
	confirmations?: number;
	created?: number;
	updated?: number;
	topic?: string;
	url?: string;
};

// Subscriptions written straight into D1, 500 to a batch.
async function seed(account: string, count: number, row: (i: number) => Seeded = () => ({})) {
	const insert = dbOf(account).prepare(
		`INSERT INTO subscriptions (uuid, account, publisher, user, topic, callback_url, token_hash, status, validity_ts, message, attempts,
			created_ts, updated_ts, confirmation_ts, confirmations)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?)`,
	);
	const uuids: string[] = [];
	for (let i = 0; i < count; i += 500) {
		const statements = Array.from({ length: Math.min(500, count - i) }, (_, j) => {
			const r = row(i + j);
			const uuid = idOf(account);
			uuids.push(uuid);
			const at = r.created ?? seconds();
			return insert.bind(
				uuid,
				account,
				account,
				account,
				r.topic ?? "abc",
				r.url ?? "https://example.com/",
				crypto.randomUUID(),
				r.status ?? "pending",
				r.validity ?? seconds() + 3600,
				crypto.randomUUID(),
				at,
				r.updated ?? at,
				r.confirmation ?? 0,
				r.confirmations ?? 0,
			);
		});
		await dbOf(account).batch(statements);
	}
	return uuids;
}

// The account's confirmation messages are moved a day into the past, as if a day had gone by.
async function aDayLater(account: string) {
	await dbOf(account)
		.prepare("UPDATE subscriptions SET confirmation_ts = confirmation_ts - ? WHERE account = ?")
		.bind(DAY, account)
		.run();
}

describe("MAX_SUBSCRIPTIONS counts confirmation messages for a day", () => {
	it("subscribing with expires: 1 stops at the limit although the earlier ones expired", async () => {
		const admin = await bootstrap();
		const { jobs, subscribe } = subscriber(admin, 3);
		let validity = 0;
		for (let i = 0; i < 3; i++) {
			const res = await subscribe({ expires: 1 });
			expect(res.status).toBe(201);
			validity = res.body.subscription.validity_ts;
		}
		// A second after they were made, all three have expired.
		await clockPast(validity);
		const listed = await call("GET", "/notifications/webhooks?status=expired", { secret: admin.secret });
		expect(Object.keys(listed.body.subscriptions)).toHaveLength(3);

		const refused = await subscribe({ expires: 1 });
		expectError(refused, 409, 409105);
		expect(refused.body.description).toContain("MAX_SUBSCRIPTIONS");
		expect(jobs).toHaveLength(3);
		expect(
			Object.keys((await call("GET", "/notifications/webhooks", { secret: admin.secret })).body.subscriptions),
		).toHaveLength(3);

		await aDayLater(admin.account);
		expect((await subscribe({ expires: 1 })).status).toBe(201);
		expect(jobs).toHaveLength(4);
	});

	it("at the default limit, 999 messages of the last day leave room for one, expired or not", async () => {
		const admin = await bootstrap();
		expect(env.MAX_SUBSCRIPTIONS).toBe(1000);
		// Made with expires: 1 within the last hour: every one lapsed, every message still counts.
		await seed(admin.account, 999, (i) => ({
			validity: 1,
			status: i % 2 ? "pending" : "expired",
			confirmation: seconds() - 3600,
			confirmations: 1,
		}));
		const { jobs, subscribe } = subscriber(admin);
		expect((await subscribe({ expires: 1 })).status).toBe(201);
		for (let i = 0; i < 5; i++) expectError(await subscribe({ expires: 1 }), 409, 409105);
		expect(jobs).toHaveLength(1);
		const { n } =
			(await dbOf(admin.account)
				.prepare("SELECT count(*) AS n FROM subscriptions WHERE account = ?")
				.bind(admin.account)
				.first<{ n: number }>()) ?? {};
		expect(n).toBe(1000);
	});

	it("an ended subscription's message counts until a day after it was issued", async () => {
		const admin = await bootstrap();
		const { subscribe } = subscriber(admin, 1);
		const made = await subscribe();
		expect(made.status).toBe(201);
		expect(
			(
				await call("DELETE", `/notifications/webhooks/subscriptions/${made.body.subscription.uuid}`, {
					secret: admin.secret,
				})
			).status,
		).toBe(200);
		expectError(await subscribe(), 409, 409105);
		await aDayLater(admin.account);
		expect((await subscribe()).status).toBe(201);
		// Another account's messages are its own.
		expect((await subscriber(await bootstrap(), 1).subscribe()).status).toBe(201);
	});

	it("each resend of a pending subscription counts one more message", async () => {
		const admin = await bootstrap();
		const { jobs, subscribe, resend } = subscriber(admin, 3);
		const made = await subscribe();
		const uuid = made.body.subscription.uuid as string;
		expect((await resend(uuid)).status).toBe(200);
		expect((await resend(uuid)).status).toBe(200);
		const before = await storedSubscription(uuid);
		expect(before).toMatchObject({ status: "pending", confirmations: 3 });

		const refused = await resend(uuid);
		expectError(refused, 409, 409105);
		expect(refused.body.description).toContain("MAX_SUBSCRIPTIONS");
		// Nothing was issued: the message, the token and the counters are as they were.
		expect(await storedSubscription(uuid)).toEqual(before);
		expectError(await subscribe(), 409, 409105);
		expect(jobs).toHaveLength(3);

		await aDayLater(admin.account);
		expect((await resend(uuid)).status).toBe(200);
		expect(await storedSubscription(uuid)).toMatchObject({ status: "pending", confirmations: 1 });
		expect(jobs).toHaveLength(4);
	});

	it("concurrent resends of different subscriptions cannot pass the limit", async () => {
		const admin = await bootstrap();
		// Three pending subscriptions whose messages went out a minute ago: 3 counted of 5.
		const uuids = await seed(admin.account, 3, () => ({ confirmation: seconds() - 60, confirmations: 1 }));
		const { jobs, resend } = subscriber(admin, 5);
		const answers = await Promise.all(uuids.map(resend));
		expect(answers.filter((res) => res.status === 200)).toHaveLength(2);
		for (const res of answers.filter((res) => res.status !== 200)) expectError(res, 409, 409105);
		expect(jobs).toHaveLength(2);
		const { total } =
			(await dbOf(admin.account)
				.prepare("SELECT sum(confirmations) AS total FROM subscriptions WHERE account = ?")
				.bind(admin.account)
				.first<{ total: number }>()) ?? {};
		expect(total).toBe(5);
	});
});

describe("ended subscriptions are pruned", () => {
	it("a subscribe deletes up to 10 that ended more than 30 days ago, with their deliveries", async () => {
		const admin = await bootstrap();
		const old = seconds() - PRUNED_AFTER_SECONDS - 60;
		const ended = await seed(admin.account, 12, (i) => ({
			status: ["unsubscribed", "failed", "expired"][i % 3],
			created: old - 12 + i,
			updated: old,
		}));
		const lapsed = await seed(admin.account, 1, () => ({
			status: "confirmed",
			validity: old,
			created: old - 100,
			updated: old - 100,
		}));
		// Kept: ended recently, or made long ago but still live.
		const recent = await seed(admin.account, 1, () => ({
			status: "unsubscribed",
			created: old,
			updated: seconds() - 60,
		}));
		const live = await seed(admin.account, 1, () => ({ status: "confirmed", created: old - 200, updated: old - 200 }));
		const delivery = dbOf(admin.account).prepare(
			"INSERT INTO webhook_deliveries (subscription, message, attempt, attempted_ts, outcome, duration_ms, detail) VALUES (?, ?, 1, 1, 'failed', 1, 'x')",
		);
		await dbOf(admin.account).batch([...ended, ...recent].map((uuid) => delivery.bind(uuid, crypto.randomUUID())));

		expect((await subscriber(admin).subscribe()).status).toBe(201);
		const remaining = async () =>
			(
				await dbOf(admin.account)
					.prepare("SELECT uuid FROM subscriptions WHERE account = ?")
					.bind(admin.account)
					.all<{ uuid: string }>()
			).results.map((r) => r.uuid);
		// The oldest first: the lapsed one, then the nine oldest ended.
		expect(await remaining()).toEqual(expect.arrayContaining([...ended.slice(9), ...recent, ...live]));
		expect(await remaining()).toHaveLength(3 + 1 + 1 + 1);
		expect(await remaining()).not.toContain(lapsed[0]);
		const deliveries = await dbOf(admin.account)
			.prepare("SELECT subscription FROM webhook_deliveries WHERE subscription IN (SELECT value FROM json_each(?))")
			.bind(JSON.stringify([...ended, ...recent]))
			.all<{ subscription: string }>();
		expect(deliveries.results.map((r) => r.subscription).sort()).toEqual([...ended.slice(9), ...recent].sort());

		expect((await subscriber(admin).subscribe()).status).toBe(201);
		expect(await remaining()).toHaveLength(1 + 1 + 2);
	});
});

// Every page of the account's listing, to the end.
async function walk(admin: Account, query: Record<string, string> = {}) {
	const pages: {
		subscriptions: Record<string, { created_ts: number; status: string; topic: string }>;
		cursor: string | null;
	}[] = [];
	let cursor: string | null = null;
	do {
		const params = new URLSearchParams({ ...query, ...(cursor ? { cursor } : {}) });
		const res = await call("GET", `/notifications/webhooks?${params}`, { secret: admin.secret });
		expect(res.status).toBe(200);
		pages.push(res.body);
		cursor = res.body.cursor;
	} while (cursor !== null);
	return pages;
}

describe("get_webhook_subscriptions answers in pages", () => {
	it("a walk of the cursor answers every subscription once, in (created_ts, uuid) order", async () => {
		const admin = await bootstrap();
		// Many share a creation time: the uuid orders them.
		const uuids = await seed(admin.account, 2345, (i) => ({
			created: 1_700_000_000 + Math.floor(i / 7),
			status: i % 5 ? "confirmed" : "unsubscribed",
			topic: i % 3 ? "abc" : "other",
		}));
		const pages = await walk(admin, { limit: String(MAX_SUBSCRIPTIONS_PAGE) });
		expect(pages.map((page) => Object.keys(page.subscriptions).length)).toEqual([1000, 1000, 345]);
		const seen = pages.flatMap((page) => Object.entries(page.subscriptions));
		expect(seen.map(([uuid]) => uuid).sort()).toEqual([...uuids].sort());
		const order = seen.map(([uuid, s]) => [s.created_ts, uuid] as const);
		expect(order).toEqual([...order].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1)));

		// 100 by default; the filters hold across pages.
		const first = await call("GET", "/notifications/webhooks", { secret: admin.secret });
		expect(Object.keys(first.body.subscriptions)).toHaveLength(100);
		expect(first.body.cursor).toEqual(expect.any(String));
		const filtered = (await walk(admin, { topic: "other", status: "unsubscribed", limit: "50" })).flatMap((page) =>
			Object.values(page.subscriptions),
		);
		const expected = Array.from({ length: 2345 }, (_, i) => i).filter((i) => i % 3 === 0 && i % 5 === 0);
		expect(filtered).toHaveLength(expected.length);
		for (const s of filtered) expect(s).toMatchObject({ topic: "other", status: "unsubscribed" });
		// An empty listing is one page without a cursor.
		expect((await call("GET", "/notifications/webhooks?topic=none", { secret: admin.secret })).body).toEqual({
			subscriptions: {},
			cursor: null,
		});
	});

	it("a full page of the largest rows stays far under 4 MiB", async () => {
		const admin = await bootstrap();
		// The longest callback URL, every character of it doubled by JSON's escapes.
		const url = `https://example.com/?${"\\".repeat(512 - "https://example.com/?".length)}`;
		await seed(admin.account, MAX_SUBSCRIPTIONS_PAGE + 1, () => ({
			url,
			topic: "t".repeat(48),
			status: "unsubscribed",
		}));
		const res = await call("GET", `/notifications/webhooks?limit=${MAX_SUBSCRIPTIONS_PAGE}`, { secret: admin.secret });
		expect(Object.keys(res.body.subscriptions)).toHaveLength(MAX_SUBSCRIPTIONS_PAGE);
		expect(res.body.cursor).not.toBeNull();
		expect(new TextEncoder().encode(JSON.stringify(res.body)).length).toBeLessThan(1.5 * 1024 * 1024);
	});

	it("refuses an invalid cursor (400104) and a limit out of 1..1000 (400101)", async () => {
		const admin = await bootstrap();
		await seed(admin.account, 3);
		const cursor = (await call("GET", "/notifications/webhooks?limit=1", { secret: admin.secret })).body
			.cursor as string;
		expect(
			(await call("GET", `/notifications/webhooks?limit=1&cursor=${cursor}`, { secret: admin.secret })).status,
		).toBe(200);
		const wrongShape = btoa(JSON.stringify({ created_ts: 1 })).replace(/=+$/, "");
		for (const bad of ["x", "%E2%9C%93", wrongShape, cursor.slice(0, -3)]) {
			expectError(await call("GET", `/notifications/webhooks?cursor=${bad}`, { secret: admin.secret }), 400, 400104);
		}
		for (const limit of ["0", "1001", "-1", "1.5", "ten"]) {
			expectError(await call("GET", `/notifications/webhooks?limit=${limit}`, { secret: admin.secret }), 400, 400101);
		}
	});
});

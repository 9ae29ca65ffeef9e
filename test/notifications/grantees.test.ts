import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_GRANTED_TOPICS, MAX_GRANTS_PAGE } from "../../src/operations/notifications-access";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap } from "../support/accounts";
import { dbOf, idOf } from "../support/shards";

// An account grants topics to at most MAX_GRANTEES accounts (invented ones included: whether
// they exist is not checked), and get_notifications_access answers in pages.

const access = (account: string) => `/notifications/webhooks/access/accounts/${account}`;

// Grants written straight into D1, 100 to a batch (a full grant is about 5 KB).
async function seedGrants(account: string, count: number, topics: string[] = ["news"]) {
	const db = dbOf(account);
	const insert = db.prepare(
		"INSERT INTO notification_grants (account, grantee, topics, updated_ts) VALUES (?, ?, ?, 1)",
	);
	const grantees: string[] = [];
	for (let i = 0; i < count; i += 100) {
		const batch = Array.from({ length: Math.min(100, count - i) }, () => crypto.randomUUID());
		grantees.push(...batch);
		await db.batch(batch.map((grantee) => insert.bind(account, grantee, JSON.stringify(topics))));
	}
	return grantees;
}

async function granteesOf(account: string) {
	const { results } = await dbOf(account)
		.prepare("SELECT grantee FROM notification_grants WHERE account = ?")
		.bind(account)
		.all<{ grantee: string }>();
	return results.map((row) => row.grantee);
}

describe("MAX_GRANTEES", () => {
	it("the 1000th grantee is granted, the next is 409 naming MAX_GRANTEES and nothing is written", async () => {
		const admin = await bootstrap();
		expect(env.MAX_GRANTEES).toBe(1000);
		const seeded = await seedGrants(admin.account, env.MAX_GRANTEES - 1);
		const last = crypto.randomUUID();
		expect((await call("PATCH", access(last), { secret: admin.secret, body: { topics: ["news"] } })).status).toBe(200);

		// A subscription of the refused account to this account's topic, as it could stand from
		// before: a refused grant ends nothing either.
		const refusedAccount = crypto.randomUUID();
		// It lives with its publisher, and carries the publisher's bucket.
		const subscription = idOf(admin.account);
		await dbOf(subscription)
			.prepare(
				`INSERT INTO subscriptions (uuid, account, publisher, user, topic, callback_url, token_hash, status, validity_ts, message, created_ts, updated_ts)
			VALUES (?, ?, ?, ?, 'old-topic', 'https://example.com/', ?, 'pending', ?, ?, 1, 1)`,
			)
			.bind(
				subscription,
				refusedAccount,
				admin.account,
				refusedAccount,
				crypto.randomUUID(),
				Date.now() / 1000 + 3600,
				crypto.randomUUID(),
			)
			.run();
		const refused = await call("PATCH", access(refusedAccount), { secret: admin.secret, body: { topics: ["news"] } });
		expectError(refused, 409, 409108);
		expect(refused.body.description).toContain("MAX_GRANTEES");
		expect(await granteesOf(admin.account)).toHaveLength(1000);
		expect(await granteesOf(admin.account)).not.toContain(refusedAccount);
		const row = await dbOf(subscription)
			.prepare("SELECT status, updated_ts FROM subscriptions WHERE uuid = ?")
			.bind(subscription)
			.first();
		expect(row).toEqual({ status: "pending", updated_ts: 1 });

		// At the limit, a grant is still replaced, and revoked; a revocation makes room.
		const replaced = await call("PATCH", access(seeded[0]), {
			secret: admin.secret,
			body: { publish: ["news", "weather"] },
		});
		expect(replaced.body).toEqual({ topics: ["news", "weather"] });
		expect((await call("PATCH", access(seeded[1]), { secret: admin.secret, body: { topics: [] } })).status).toBe(200);
		expect(
			(await call("PATCH", access(refusedAccount), { secret: admin.secret, body: { topics: ["news"] } })).status,
		).toBe(200);
		expect(await granteesOf(admin.account)).toHaveLength(1000);
		// Revoking a grant that does not exist is allowed at the limit too.
		expect(
			(await call("PATCH", access(crypto.randomUUID()), { secret: admin.secret, body: { topics: [] } })).status,
		).toBe(200);
		// Another account's grants are its own.
		const other = await bootstrap();
		expect(
			(await call("PATCH", access(admin.account), { secret: other.secret, body: { topics: ["news"] } })).status,
		).toBe(200);
	});

	it("concurrent grants to new accounts cannot pass the limit", async () => {
		const admin = await bootstrap();
		await seedGrants(admin.account, 1);
		const grant = () =>
			call("PATCH", access(crypto.randomUUID()), {
				secret: admin.secret,
				body: { topics: ["news"] },
				env: { MAX_GRANTEES: 3 },
			});
		const answers = await Promise.all(Array.from({ length: 6 }, grant));
		expect(answers.filter((res) => res.status === 200)).toHaveLength(2);
		for (const res of answers.filter((res) => res.status !== 200)) expectError(res, 409, 409108);
		expect(await granteesOf(admin.account)).toHaveLength(3);
	});
});

// Every page of the account's grants, to the end.
async function walk(admin: Account, limit?: number) {
	const pages: { accounts: Record<string, { topics: string[] }>; cursor: string | null; bytes: number }[] = [];
	let cursor: string | null = null;
	do {
		const params = new URLSearchParams({ ...(limit ? { limit: String(limit) } : {}), ...(cursor ? { cursor } : {}) });
		const res = await call("GET", `/notifications/webhooks/access?${params}`, { secret: admin.secret });
		expect(res.status).toBe(200);
		pages.push({ ...res.body, bytes: new TextEncoder().encode(JSON.stringify(res.body)).length });
		cursor = res.body.cursor;
	} while (cursor !== null);
	return pages;
}

describe("get_notifications_access answers in pages", () => {
	it("1000 grants of 100 topics of 48 characters: pages far under 4 MiB, each grantee once, in order", async () => {
		const admin = await bootstrap();
		const topics = Array.from(
			{ length: MAX_GRANTED_TOPICS },
			(_, i) => `${String(i).padStart(3, "0")}${"t".repeat(45)}`,
		);
		const grantees = await seedGrants(admin.account, 1000, topics);

		const pages = await walk(admin, MAX_GRANTS_PAGE);
		expect(pages.map((page) => Object.keys(page.accounts).length)).toEqual([250, 250, 250, 250]);
		for (const page of pages) expect(page.bytes).toBeLessThan(1.5 * 1024 * 1024);
		const seen = pages.flatMap((page) => Object.keys(page.accounts));
		expect(seen).toEqual([...grantees].sort());
		expect(pages[0].accounts[seen[0]]).toEqual({ topics });

		// 100 by default.
		const first = await call("GET", "/notifications/webhooks/access", { secret: admin.secret });
		expect(Object.keys(first.body.accounts)).toEqual(seen.slice(0, 100));
		expect((await walk(admin)).length).toBe(10);
	});

	it("refuses an invalid cursor (400104) and a limit out of 1..250 (400101)", async () => {
		const admin = await bootstrap();
		await seedGrants(admin.account, 2);
		const { cursor } = (await call("GET", "/notifications/webhooks/access?limit=1", { secret: admin.secret })).body;
		expect(
			(await call("GET", `/notifications/webhooks/access?cursor=${cursor}`, { secret: admin.secret })).body.cursor,
		).toBeNull();
		for (const bad of ["x", "W10", btoa(JSON.stringify([1])).replace(/=+$/, "")]) {
			expectError(
				await call("GET", `/notifications/webhooks/access?cursor=${bad}`, { secret: admin.secret }),
				400,
				400104,
			);
		}
		for (const limit of ["0", "251", "many"]) {
			expectError(
				await call("GET", `/notifications/webhooks/access?limit=${limit}`, { secret: admin.secret }),
				400,
				400101,
			);
		}
	});
});

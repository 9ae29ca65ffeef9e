import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MAX_DESCRIPTION_BYTES } from "../../src/base/limits";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { recordingQueue } from "../support/webhooks";
import { dbOf, idOf } from "../support/shards";

// Per-account limits, with the defaults of wrangler.toml. The rows up to
// the limit are written straight into D1; the last ones go through the API.

async function fill(db: D1Database, count: number, statement: D1PreparedStatement, bind: (i: number) => unknown[]) {
	for (let i = 0; i < count; i += 500) {
		await db.batch(Array.from({ length: Math.min(500, count - i) }, (_, j) => statement.bind(...bind(i + j))));
	}
}

describe("per-account limits", () => {
	it("are the contract's defaults", () => {
		expect([env.MAX_ROLES, env.MAX_USERS, env.MAX_SUBSCRIPTIONS]).toEqual([1000, 10000, 1000]);
	});

	it("roles: the 1000th is created, the next is 409 naming MAX_ROLES", async () => {
		const admin = await bootstrap();
		const db = dbOf(admin.account);
		const insert = db.prepare(
			`INSERT INTO roles (uuid, account, name, rules, statement, created_ts, updated_ts)
			VALUES (?, ?, 'filler', '{"twin":null,"entry":null,"identity":null}', '{"effect":"deny","actions":null}', 0, 0)`,
		);
		await fill(db, env.MAX_ROLES - 2, insert, () => [idOf(admin.account), admin.account]);
		expect((await call("POST", "/roles", { secret: admin.secret, body: { name: "Last" } })).status).toBe(201);
		const res = await call("POST", "/roles", { secret: admin.secret, body: { name: "One more" } });
		expectError(res, 409, 409103);
		expect(res.body.description).toContain("MAX_ROLES");
		// Another account is not affected.
		const other = await bootstrap();
		expect((await call("POST", "/roles", { secret: other.secret, body: { name: "Fine" } })).status).toBe(201);
	});

	it("twins: concurrent creates stop at MAX_TWINS, which counts every twin the account made", async () => {
		expect(env.MAX_TWINS).toBe(100_000);
		const admin = await bootstrap();
		// As if the account had made all but three of its twins (terminated ones count too).
		await dbOf(admin.account)
			.prepare("UPDATE accounts SET twins = ? WHERE uuid = ?")
			.bind(env.MAX_TWINS - 3, admin.account)
			.run();
		const answers = await Promise.all(
			Array.from({ length: 5 }, () => call("POST", "/twins", { secret: admin.secret, body: {} })),
		);
		expect(answers.filter((res) => res.status === 201)).toHaveLength(3);
		for (const res of answers.filter((res) => res.status !== 201)) {
			expectError(res, 409, 409109);
			expect(res.body.description).toContain("MAX_TWINS");
		}
		const stored = await dbOf(admin.account)
			.prepare(
				"SELECT (SELECT twins FROM accounts WHERE uuid = ?1) AS counted, (SELECT count(*) FROM twins WHERE owner = ?1) AS made",
			)
			.bind(admin.account)
			.first();
		expect(stored).toEqual({ counted: env.MAX_TWINS, made: 3 });
		// Another account is not affected.
		const other = await bootstrap();
		expect((await call("POST", "/twins", { secret: other.secret, body: {} })).status).toBe(201);
	});

	it("users: the 10000th is created, the next is 409 naming MAX_USERS", async () => {
		const admin = await bootstrap();
		const db = dbOf(admin.account);
		const insert = db.prepare(
			"INSERT INTO users (uuid, account, name, role, description, created_ts, updated_ts) VALUES (?, ?, 'filler', ?, '{}', 0, 0)",
		);
		await fill(db, env.MAX_USERS - 2, insert, () => [idOf(admin.account), admin.account, admin.role]);
		expect(
			(await call("POST", "/users", { secret: admin.secret, body: { name: "last", role: admin.role } })).status,
		).toBe(201);
		const res = await call("POST", "/users", { secret: admin.secret, body: { name: "more", role: admin.role } });
		expectError(res, 409, 409104);
		expect(res.body.description).toContain("MAX_USERS");
	});

	it("webhook subscriptions: only live ones count, and concurrent subscribes cannot pass the limit", async () => {
		const admin = await bootstrap();
		const db = dbOf(admin.account);
		const insert = db.prepare(
			`INSERT INTO subscriptions (uuid, account, user, topic, callback_url, token_hash, status, validity_ts, message, attempts, created_ts, updated_ts)
			VALUES (?, ?, ?, 'abc', 'https://example.com/', ?, ?, ?, ?, 0, 0, 0)`,
		);
		const far = Date.now() / 1000 + 3600;
		const statuses = ["pending", "confirmed"];
		await fill(db, env.MAX_SUBSCRIPTIONS - 3, insert, (i) => [
			idOf(admin.account),
			admin.account,
			admin.user,
			crypto.randomUUID(),
			statuses[i % 2],
			far,
			crypto.randomUUID(),
		]);
		// Final or lapsed subscriptions do not count.
		await fill(db, 20, insert, (i) => [
			idOf(admin.account),
			admin.account,
			admin.user,
			crypto.randomUUID(),
			i < 5 ? "pending" : ["failed", "unsubscribed", "expired"][i % 3],
			i < 5 ? 1 : far,
			crypto.randomUUID(),
		]);

		const subscribe = () =>
			call("POST", "/notifications/webhooks", {
				secret: admin.secret,
				body: { topic: "abc", callback_url: "https://example.com/hook" },
				env: { WEBHOOKS: recordingQueue().binding },
			});
		const answers = await Promise.all(Array.from({ length: 6 }, subscribe));
		expect(answers.filter((res) => res.status === 201)).toHaveLength(3);
		const refused = answers.filter((res) => res.status !== 201);
		for (const res of refused) expectError(res, 409, 409105);
		expect(refused[0].body.description).toContain("MAX_SUBSCRIPTIONS");
	});

	it("webhook subscriptions: concurrent resends revive failed ones only up to the limit", async () => {
		const admin = await bootstrap();
		const db = dbOf(admin.account);
		const insert = db.prepare(
			`INSERT INTO subscriptions (uuid, account, user, topic, callback_url, token_hash, status, validity_ts, message, attempts, created_ts, updated_ts)
			VALUES (?, ?, ?, 'abc', 'https://example.com/', ?, ?, ?, ?, 0, 0, 0)`,
		);
		const far = Date.now() / 1000 + 3600;
		const failed = Array.from({ length: 6 }, () => idOf(admin.account));
		await db.batch(
			failed.map((uuid) =>
				insert.bind(uuid, admin.account, admin.user, crypto.randomUUID(), "failed", far, crypto.randomUUID()),
			),
		);
		await db.batch([
			insert.bind(
				idOf(admin.account),
				admin.account,
				admin.user,
				crypto.randomUUID(),
				"confirmed",
				far,
				crypto.randomUUID(),
			),
		]);

		const resend = (uuid: string) =>
			call("POST", `/notifications/webhooks/subscriptions/${uuid}/confirmation`, {
				secret: admin.secret,
				env: { MAX_SUBSCRIPTIONS: 3, WEBHOOKS: recordingQueue().binding },
			});
		const answers = await Promise.all(failed.map(resend));
		expect(answers.filter((res) => res.status === 200)).toHaveLength(2);
		for (const res of answers.filter((res) => res.status !== 200)) expectError(res, 409, 409105);
		const { results } = await db
			.prepare("SELECT status, count(*) AS n FROM subscriptions WHERE account = ? GROUP BY status ORDER BY status")
			.bind(admin.account)
			.all();
		expect(results).toEqual([
			{ status: "confirmed", n: 1 },
			{ status: "failed", n: 4 },
			{ status: "pending", n: 2 },
		]);
	});
});

describe("descriptions", () => {
	const sized = (bytes: number) => {
		const base = JSON.stringify({ text: "" }).length;
		return { text: "é".repeat(Math.floor((bytes - base) / 2)) + "x".repeat((bytes - base) % 2) };
	};

	it("of twins and users are at most 32 KiB as compact JSON", async () => {
		const admin = await bootstrap();
		expect(new TextEncoder().encode(JSON.stringify(sized(MAX_DESCRIPTION_BYTES))).length).toBe(MAX_DESCRIPTION_BYTES);
		expect(
			(await call("POST", "/twins", { secret: admin.secret, body: { description: sized(MAX_DESCRIPTION_BYTES) } }))
				.status,
		).toBe(201);
		expect(
			(
				await call("POST", "/users", {
					secret: admin.secret,
					body: { name: "big", role: admin.role, description: sized(MAX_DESCRIPTION_BYTES) },
				})
			).status,
		).toBe(201);

		const over = sized(MAX_DESCRIPTION_BYTES + 1);
		for (const [method, path, body] of [
			["POST", "/twins", { description: over }],
			["POST", "/users", { name: "big", role: admin.role, description: over }],
			["PATCH", `/users/${admin.user}`, { description: over }],
		] as const) {
			const res = await call(method, path, { secret: admin.secret, body });
			expectError(res, 400, 400101);
			expect(res.body.details).toEqual([{ path: "description", message: expect.stringContaining("32768 bytes") }]);
		}
	});
});

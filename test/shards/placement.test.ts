import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { base64Url, sha256Hex } from "../../src/base/crypto";
import { bucketOfId, bucketOfSecret } from "../../src/base/shards";
import { insertAccount } from "../../src/db/accounts";
import { database } from "../../src/db/client";
import { ADMIN_ROLE_NAME } from "../../src/operations/accounts";
import { DEFAULT_STATEMENT, NO_RULES } from "../../src/operations/roles-defaults";
import { bootstrap, bootstrapOn, createUser } from "../support/accounts";
import { call, d1Cost, expectError } from "../support/requests";
import { newTwin } from "../support/twins";

// Where accounts land and how a request finds their database (docs/scaling.md): the tests'
// configuration is the default one, SHARDS = "0-127:DB_0,128-255:DB_1".
const bindingOf = (id: string) => (bucketOfId(id)! < 128 ? "DB_0" : "DB_1");
const other = (binding: string) => (binding === "DB_0" ? env.DB_1 : env.DB_0);
const own = (binding: string) => (binding === "DB_0" ? env.DB_0 : env.DB_1);

const rowOf = (db: D1Database, table: string, uuid: string) =>
	db.prepare(`SELECT uuid FROM ${table} WHERE uuid = ?`).bind(uuid).first();

describe("a new account", () => {
	it("lands on both databases, each as likely, with version-8 ids naming its bucket", async () => {
		const accounts = await Promise.all(Array.from({ length: 24 }, () => bootstrap()));
		const bindings = new Set(accounts.map((a) => bindingOf(a.account)));
		// 24 draws of a fair coin all alike: one chance in 2^23.
		expect(bindings).toEqual(new Set(["DB_0", "DB_1"]));
		for (const { account, user, role, secret } of accounts) {
			expect(account).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
			const bucket = bucketOfId(account);
			expect(bucketOfId(user)).toBe(bucket);
			expect(bucketOfId(role)).toBe(bucket);
			expect(bucketOfSecret(secret)).toBe(bucket);
		}
	});

	it("keeps every row it makes in its own database, none in the other", async () => {
		for (const binding of ["DB_0", "DB_1"]) {
			const admin = await bootstrapOn(binding);
			expect(bindingOf(admin.account)).toBe(binding);
			const user = await createUser(admin);
			const twin = await newTwin(admin.secret);
			for (const id of [user, twin]) expect(bucketOfId(id)).toBe(bucketOfId(admin.account));
			for (const [table, uuid] of [
				["accounts", admin.account],
				["users", user],
				["roles", admin.role],
				["twins", twin],
			] as const) {
				expect(await rowOf(own(binding), table, uuid), `${table} on ${binding}`).not.toBeNull();
				expect(await rowOf(other(binding), table, uuid), `${table} not on the other`).toBeNull();
			}
		}
	});

	it("goes only where NEW_ACCOUNTS says", async () => {
		for (let i = 0; i < 6; i++) expect(bindingOf((await bootstrapOn("DB_1")).account)).toBe("DB_1");
	});
});

describe("x-d1-bookmark", () => {
	it("names one bookmark per database the request touched, the caller's first", async () => {
		const a = await bootstrapOn("DB_1");
		const res = await call("GET", "/whoami", { secret: a.secret });
		expect(res.status).toBe(200);
		expect(res.headers.get("x-d1-bookmark")).toMatch(/^DB_1=[^,]+$/);

		// B reads a twin of A's, on the other database, through its twin rule.
		const b = await bootstrapOn("DB_0");
		const shared = await newTwin(a.secret);
		const role = await call("POST", "/roles", {
			secret: b.secret,
			body: { name: "sees all", rules: { twin: "true" }, statement: { effect: "allow", actions: ["get_twin"] } },
		});
		expect(role.status).toBe(201);
		const reader = await call("POST", "/users", { secret: b.secret, body: { name: "r", role: role.body.uuid } });
		const pin = await call("POST", `/users/${reader.body.uuid}/secrets`, { secret: b.secret, body: {} });
		const secret = (await call("POST", `/secrets/${b.account}/${pin.body.pin}`)).body.secret as string;
		const read = await call("GET", `/twins/${shared}`, { secret });
		expect(read.status).toBe(200);
		expect(read.headers.get("x-d1-bookmark")).toMatch(/^DB_0=[^,]+, DB_1=[^,]+$/);
	});

	it("is not sent to a caller whose credential failed", async () => {
		const res = await call("GET", "/whoami", { secret: "x".repeat(64) });
		expectError(res, 401, 401102);
		expect(res.headers.get("x-d1-bookmark")).toBeNull();
	});
});

describe("a bad SHARDS", () => {
	it.each([
		["0-127:DB_0", "a bucket unmapped"],
		["0-127:DB_0,100-255:DB_1", "a bucket mapped twice"],
		["0-127:DB_0,128-255:DB_2", "an undeclared binding"],
	])("%j (%s) answers every request 500241 and reads nothing", async (shards) => {
		const admin = await bootstrap();
		for (const [method, path, options] of [
			["GET", "/whoami", { secret: admin.secret }],
			["POST", "/admin/accounts", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } }],
			["GET", "/twins/00000000-0000-4000-8000-000000000000", {}],
		] as const) {
			const res = await call(method, path, { ...options, env: { SHARDS: shards } });
			expectError(res, 500, 500241);
			expect(d1Cost(res, "queries")).toBe(0);
		}
		// The same isolate serves the good map again at once.
		expect((await call("GET", "/whoami", { secret: admin.secret })).status).toBe(200);
	});
});

describe("an account from before sharding", () => {
	// Written as the code before sharding made one: version-4 ids, a secret of random bytes, all
	// of it on DB_0. The secret's first byte names a bucket of DB_1, as half of them do: it is
	// looked for there first, then on DB_0.
	async function preShardingAccount() {
		const [account, role, user] = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
		const bytes = crypto.getRandomValues(new Uint8Array(48));
		bytes[0] = 200;
		const secret = base64Url(bytes);
		const at = Date.now() / 1000;
		await insertAccount(database(env.DB_0), {
			account: { uuid: account, created_ts: at, updated_ts: at },
			role: {
				uuid: role,
				account,
				name: ADMIN_ROLE_NAME,
				rules: NO_RULES,
				statement: DEFAULT_STATEMENT,
				created_ts: at,
				updated_ts: at,
			},
			user: { uuid: user, account, name: "admin", role, description: {}, created_ts: at, updated_ts: at },
			secret: {
				user,
				account,
				hash: await sha256Hex(secret),
				fingerprint: secret.slice(-4),
				validity_ts: null,
				created_ts: at,
				updated_ts: at,
			},
		});
		return { account, role, user, secret };
	}

	it("is served from DB_0 unchanged: its secret, its twins, its scans, its new users and secrets", async () => {
		const old = await preShardingAccount();
		const me = await call("GET", "/whoami", { secret: old.secret });
		expect(me.status).toBe(200);
		expect(me.body.account).toBe(old.account);
		// A pre-sharding secret costs one query more: its bucket's database, then DB_0.
		expect(d1Cost(me, "queries")).toBe(2);

		const twin = await newTwin(old.secret);
		expect(twin).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
		expect(await rowOf(env.DB_0, "twins", twin)).not.toBeNull();
		expect((await call("GET", `/twins/${twin}`, { secret: old.secret })).status).toBe(200);
		const page = await call("GET", "/twins?count=10", { secret: old.secret });
		expect(page.body.twins).toEqual([twin]);

		// A user it makes stays version 4, and its new secret is found in one query.
		const user = await createUser(old);
		expect(user).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
		const pin = await call("POST", `/users/${user}/secrets`, { secret: old.secret, body: {} });
		const redeemed = await call("POST", `/secrets/${old.account}/${pin.body.pin}`);
		expect(redeemed.status).toBe(201);
		const fresh = await call("GET", "/whoami", { secret: redeemed.body.secret });
		expect(fresh.body.user).toBe(user);
		expect(d1Cost(fresh, "queries")).toBe(1);
	});
});

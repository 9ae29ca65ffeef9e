import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bucketOfId, bucketOfIdentity } from "../../src/base/shards";
import { bindingOfBucket } from "../../src/db/shards";
import { bootstrapOn, userWithRules } from "../support/accounts";
import { addEntries } from "../support/ledgers";
import { call, d1Cost, fingerprint } from "../support/requests";
import { allShards, dbOf } from "../support/shards";
import { newTwin } from "../support/twins";
import { until } from "../support/waiting";
import { attach, idPath } from "../identities/helpers";

// The directory of public identities and the lists of who holds identities on a twin
// (docs/scaling.md, "What crosses accounts"): resolve with context=system finds other accounts'
// public identities through one lookup in the database of the identity's hash, and a reader of
// a twin's identities asks only the databases of the accounts that hold some on it.

const resolve = (secret: string, identity: string) =>
	call("GET", `/resolve/${encodeURIComponent(identity)}?context=system`, { secret });
const foreign = (secret: string, twin: string) => call("GET", `${idPath(twin)}?show_foreign=true`, { secret });
const count = async (db: D1Database, sql: string, ...values: unknown[]) =>
	(await db
		.prepare(sql)
		.bind(...values)
		.first<{ n: number }>())!.n;
const entries = (identity: string) =>
	Promise.all(
		allShards().map((db) => count(db, "SELECT count(*) AS n FROM identity_directory WHERE identity = ?", identity)),
	);

// A's twin on DB_0, seen by the readers of B and C on DB_1.
async function accountsApart() {
	const a = await bootstrapOn("DB_0");
	const [b, c] = [await bootstrapOn("DB_1"), await bootstrapOn("DB_1")];
	const twin = await newTwin(a.secret, { shared: true });
	const sees = { twin: "TWIN.shared == true", identity: "true" };
	return {
		a,
		b,
		c,
		twin,
		bReader: (await userWithRules(b, sees)).secret,
		cReader: (await userWithRules(c, sees)).secret,
	};
}

// A name of this test's own whose hash names a bucket none of `accounts` is in.
async function identityApartFrom(...accounts: string[]) {
	const taken = new Set(accounts.map((account) => bucketOfId(account)));
	for (;;) {
		const identity = `RFID#${crypto.randomUUID().slice(0, 8)}`;
		const bucket = await bucketOfIdentity(identity);
		if (!taken.has(bucket)) return { identity, bucket };
	}
}

describe("the directory of public identities", () => {
	it("holds a public identity once, in the database of its hash, and resolve finds it there", async () => {
		const { a, b, twin, bReader, cReader } = await accountsApart();
		const { identity, bucket } = await identityApartFrom(a.account, b.account);
		await attach(bReader, twin, { [identity]: { visibility: "true" } });
		const home = bindingOfBucket(env, bucket);
		expect(await entries(identity)).toEqual(["DB_0", "DB_1"].map((binding) => (binding === home ? 1 : 0)));
		expect((await resolve(cReader, identity)).body).toEqual({ twins: [twin], cursor: null });
		// A private one never enters it.
		const secret = `SN#${crypto.randomUUID().slice(0, 8)}`;
		await attach(bReader, twin, { [secret]: {} });
		expect(await entries(secret)).toEqual([0, 0]);
		expect((await resolve(cReader, secret)).body).toEqual({ twins: [], cursor: null });
	});

	it("stops finding an identity made private or deleted on the very next request", async () => {
		const { twin, bReader, cReader } = await accountsApart();
		const identity = `RFID#${crypto.randomUUID().slice(0, 8)}`;
		await attach(bReader, twin, { [identity]: { visibility: "true" } });
		expect((await resolve(cReader, identity)).body.twins).toEqual([twin]);

		const hidden = await call("PATCH", idPath(twin, identity), { secret: bReader, body: { visibility: null } });
		expect(hidden.status).toBe(200);
		expect((await resolve(cReader, identity)).body.twins).toEqual([]);
		expect(await entries(identity)).toEqual([0, 0]);

		await call("PATCH", idPath(twin, identity), { secret: bReader, body: { visibility: "true" } });
		expect((await resolve(cReader, identity)).body.twins).toEqual([twin]);
		expect((await call("DELETE", idPath(twin, identity), { secret: bReader })).status).toBe(200);
		expect((await resolve(cReader, identity)).body.twins).toEqual([]);
		expect(await entries(identity)).toEqual([0, 0]);
	});

	it("reveals nothing through an entry it still holds for an identity gone or hidden", async () => {
		const { b, c, twin, bReader, cReader } = await accountsApart();
		const { identity, bucket } = await identityApartFrom(b.account, c.account);
		const before = await resolve(cReader, identity);
		// An entry the outbox has not yet removed: no identity behind it.
		await env[bindingOfBucket(env, bucket) as "DB_0"]
			.prepare("INSERT INTO identity_directory (identity, account, twin, bucket) VALUES (?, ?, ?, ?)")
			.bind(identity, b.account, twin, bucket)
			.run();
		const stale = await resolve(cReader, identity);
		expect(fingerprint(stale)).toEqual(fingerprint(before));
		// A public identity the reader's identity rule hides: read where B lives, then not counted.
		await attach(bReader, twin, { [identity]: { visibility: "USER.partner == true" } });
		const hidden = await resolve(cReader, identity);
		expect(hidden.body.twins).toEqual([]);
		expect(fingerprint(hidden)).toEqual(fingerprint(before));
		expect(d1Cost(hidden, "queries")).toBe(d1Cost(before, "queries"));
	});

	it("applies each change exactly once, in order, across a drain that had to wait", async () => {
		const { a, b, twin, bReader, cReader } = await accountsApart();
		const { identity, bucket } = await identityApartFrom(a.account, b.account);
		// The identity's bucket moving: the drain waits, and the write still answers.
		const moving =
			"INSERT INTO bucket_moves (bucket, prefix, source, target, state, started_ts) VALUES (?, ?, ?, ?, ?, ?)";
		const home = dbOf(b.account);
		await home.prepare(moving).bind(bucket, bucket.toString(16).padStart(2, "0"), "DB_0", "DB_1", "copying", 0).run();
		try {
			await attach(bReader, twin, { [identity]: { visibility: "true" } });
			const outbox = "SELECT count(*) AS n FROM directory_outbox WHERE account = ?";
			expect(await count(home, outbox, b.account)).toBe(1);
			// Not yet in the directory: hidden for now, never shown wrongly.
			expect((await resolve(cReader, identity)).body.twins).toEqual([]);
			// The same change twice in the outbox (a drain that applied it but failed to delete it).
			await home
				.prepare("INSERT INTO directory_outbox (account, identity, twin, change) VALUES (?, ?, ?, 'put')")
				.bind(b.account, identity, twin)
				.run();
		} finally {
			await home.prepare("DELETE FROM bucket_moves WHERE bucket = ?").bind(bucket).run();
		}
		// The object's timer drains it within seconds.
		await until(
			() => resolve(cReader, identity),
			(res) => res.body.twins.length > 0,
			"the directory to list the identity",
			5_000,
		);
		expect((await resolve(cReader, identity)).body).toEqual({ twins: [twin], cursor: null });
		expect(await entries(identity)).toEqual(
			["DB_0", "DB_1"].map((binding) => (binding === bindingOfBucket(env, bucket) ? 1 : 0)),
		);
		expect(await count(home, "SELECT count(*) AS n FROM directory_outbox WHERE account = ?", b.account)).toBe(0);
	});

	it("is filled with an account's public identities from before it on the account's first write", async () => {
		// As the migration that made the directory leaves them: the identity, and a row in the outbox.
		const a = await bootstrapOn("DB_1");
		const twin = await newTwin(a.secret, {});
		const identity = `RFID#${crypto.randomUUID().slice(0, 8)}`;
		await dbOf(a.account).batch([
			dbOf(a.account)
				.prepare(
					"INSERT INTO twin_identities (twin, account, identity, validity_ts, visibility, created_ts, updated_ts) VALUES (?, ?, ?, NULL, 'true', 1, 1)",
				)
				.bind(twin, a.account, identity),
			dbOf(a.account)
				.prepare("INSERT INTO directory_outbox (account, identity, twin, change) VALUES (?, ?, ?, 'put')")
				.bind(a.account, identity, twin),
		]);
		const c = await bootstrapOn("DB_0");
		const cReader = (await userWithRules(c, { twin: "true", identity: "true" })).secret;
		expect((await resolve(cReader, identity)).body.twins).toEqual([]);
		// A's first write through its object: a ledger's, the one most accounts make most.
		await addEntries(a.secret, twin, { n: { value: 1 } });
		expect((await resolve(cReader, identity)).body.twins).toEqual([twin]);
	});
});

describe("the accounts holding identities on a twin", () => {
	it("are listed with the twin before their public identities are written, and asked for them", async () => {
		const { a, b, twin, bReader, cReader } = await accountsApart();
		const holders = "SELECT count(*) AS n FROM twin_holders WHERE twin = ? AND account = ?";
		await attach(bReader, twin, { "SN#private": {} });
		expect(await count(env.DB_0, holders, twin, b.account)).toBe(0);
		await attach(bReader, twin, { "RFID#b": { visibility: "true" } });
		expect(await count(env.DB_0, holders, twin, b.account)).toBe(1);
		expect(await count(env.DB_1, holders, twin, b.account)).toBe(0);
		await attach(a.secret, twin, { "RFID#a": { visibility: "true" } });
		// The owner is asked always, so it is never listed.
		expect(await count(env.DB_0, holders, twin, a.account)).toBe(0);
		const listed = (await foreign(cReader, twin)).body.foreign;
		expect(Object.keys(listed[b.account])).toEqual(["RFID#b"]);
		expect(Object.keys(listed[a.account])).toEqual(["RFID#a"]);
	});

	it("cost a reader nothing, and are named nowhere, where it sees none of their identities", async () => {
		// The reader in the twin's database, the holder in the other.
		const { a, b, twin, bReader } = await accountsApart();
		const reader = (await userWithRules(a, { identity: "true" })).secret;
		const before = await foreign(reader, twin);
		expect(before.headers.get("x-d1-bookmark")).toMatch(/^DB_0=[^,]+$/);
		await attach(bReader, twin, { "RFID#hidden": { visibility: "USER.partner == true" } });
		const after = await foreign(reader, twin);
		expect(after.body.foreign).toEqual({});
		expect(fingerprint(after)).toEqual(fingerprint(before));
		// Once it sees one, B's database counts and is named.
		await attach(bReader, twin, { "RFID#shown": { visibility: "true" } });
		const seen = await foreign(reader, twin);
		expect(Object.keys(seen.body.foreign[b.account])).toEqual(["RFID#shown"]);
		expect(d1Cost(seen, "queries")).toBe(d1Cost(before, "queries") + 1);
		expect(seen.headers.get("x-d1-bookmark")).toMatch(/^DB_0=[^,]+, DB_1=/);
	});
});

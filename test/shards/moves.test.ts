import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bucketOfId, bucketOfIdentity } from "../../src/base/shards";
import { type Account, bootstrapOn, createUser, userWithRules } from "../support/accounts";
import { attach } from "../identities/helpers";
import { call, expectError } from "../support/requests";
import { newTwin } from "../support/twins";
import { until } from "../support/waiting";
import { IdentityProvider } from "../federation/identity-provider";
import { addProvider, exchange } from "../federation/helpers";

// Moving a bucket of accounts to another database while the service runs (docs/scaling.md,
// "Moving a bucket"). The flip, which a deploy or a reloaded `npm start` does, is a request
// whose SHARDS maps the bucket to its new database: the Worker then serves the bucket from it.
// The files of a test runtime run one after another, so no other test writes meanwhile; the
// accounts earlier files left in the bucket move along, as any account of a moving bucket does.

const admin = { authorization: `Bearer ${env.ADMIN_TOKEN}` };
const bucketOf = (account: Account) => bucketOfId(account.account)!;
const movePath = (bucket: number) => `/admin/shards/moves/${bucket}`;
// The default map with `bucket` (one of DB_0's, 0-127) on DB_1.
const flippedMap = (bucket: number) =>
	[
		bucket > 0 ? `0-${bucket - 1}:DB_0` : "",
		`${bucket}:DB_1`,
		bucket < 127 ? `${bucket + 1}-127:DB_0` : "",
		"128-255:DB_1",
	]
		.filter(Boolean)
		.join(",");

const rowCount = async (db: D1Database, table: string, column: string, account: string) =>
	(await db.prepare(`SELECT count(*) AS n FROM ${table} WHERE ${column} = ?`).bind(account).first<{ n: number }>())!.n;

// An identity whose directory entry the bucket holds.
async function identityOfBucket(bucket: number) {
	for (;;) {
		const identity = `RFID#${crypto.randomUUID().slice(0, 12)}`;
		if ((await bucketOfIdentity(identity)) === bucket) return identity;
	}
}

async function moveTo(bucket: number, to: string) {
	const res = await call("POST", "/admin/shards/moves", { headers: admin, body: { bucket, to } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body;
}

const moveState = (bucket: number, map?: string) =>
	call("GET", movePath(bucket), { headers: admin, ...(map ? { env: { SHARDS: map } } : {}) });

const settled = (bucket: number, state: string, map?: string) =>
	until(
		() => moveState(bucket, map),
		(res) => res.body.state === state,
		`the move of bucket ${bucket} to be ${state}`,
	);

describe("moving a bucket", () => {
	it("refuses the bucket's writes, serves its reads, copies it, then serves it from the target", async () => {
		const a = await bootstrapOn("DB_0");
		const bucket = bucketOf(a);
		const twin = await newTwin(a.secret, { plate: "AB-1" });
		const user = await createUser(a);
		const other = await bootstrapOn("DB_0");
		// Rows placed by the bucket, not by its accounts: a directory entry of an identity whose hash
		// names it, and the list of another database's account holding identities on A's twin.
		const named = await identityOfBucket(bucket);
		await attach(a.secret, twin, { [named]: { visibility: "true" } });
		const b = await bootstrapOn("DB_1");
		const bReader = (await userWithRules(b, { twin: "true", identity: "true" })).secret;
		await attach(bReader, twin, { "RFID#b": { visibility: "true" } });
		const placed = async (db: D1Database) => [
			await rowCount(db, "identity_directory", "identity", named),
			await rowCount(db, "twin_holders", "twin", twin),
		];
		expect(await placed(env.DB_0)).toEqual([1, 1]);

		const started = await moveTo(bucket, "DB_1");
		expect(started).toMatchObject({ bucket, source: "DB_0", target: "DB_1", state: "grace" });

		// Writes of the bucket's accounts: refused, with when to try again; nothing written.
		const refused = await call("POST", "/twins", { secret: a.secret, body: {} });
		expectError(refused, 503, 503241);
		expect(refused.headers.get("retry-after")).toBe("5");
		expectError(await call("POST", `/users/${user}/secrets`, { secret: a.secret, body: {} }), 503, 503241);
		expectError(await call("POST", `/secrets/${a.account}/ABCDEFGH`), 503, 503241);
		// Reads go on; other buckets' writes too (unless `other` shares the bucket).
		expect((await call("GET", `/twins/${twin}`, { secret: a.secret })).status).toBe(200);
		if (bucketOf(other) !== bucket)
			expect((await call("POST", "/twins", { secret: other.secret, body: {} })).status).toBe(201);
		// One move at a time.
		const second = await call("POST", "/admin/shards/moves", {
			headers: admin,
			body: { bucket: (bucket + 1) % 128, to: "DB_1" },
		});
		expectError(second, 409, 409101);

		const copied = await settled(bucket, "copied");
		expect(copied.body.copied_rows).toBeGreaterThanOrEqual(5);
		for (const db of [env.DB_0, env.DB_1]) {
			expect(await rowCount(db, "accounts", "uuid", a.account)).toBe(1);
			expect(await rowCount(db, "twins", "owner", a.account)).toBe(1);
			expect(await rowCount(db, "users", "account", a.account)).toBe(2);
		}
		// Not flipped: the Worker serving the old map leaves it copied, and writes refused.
		expect((await moveState(bucket)).body.state).toBe("copied");
		expectError(await call("POST", "/twins", { secret: a.secret, body: {} }), 503, 503241);

		// The flip: a Worker on the new map ends the move; writes resume there.
		const map = flippedMap(bucket);
		await settled(bucket, "done", map);
		expect(await rowCount(env.DB_0, "twins", "owner", a.account)).toBe(0);
		expect(await rowCount(env.DB_0, "accounts", "uuid", a.account)).toBe(0);
		expect(await rowCount(env.DB_1, "twins", "owner", a.account)).toBe(1);
		expect([await placed(env.DB_0), await placed(env.DB_1)]).toEqual([
			[0, 0],
			[1, 1],
		]);
		const found = await call("GET", `/resolve/${encodeURIComponent(named)}?context=system`, {
			secret: bReader,
			env: { SHARDS: map },
		});
		expect(found.body.twins).toEqual([twin]);
		const me = await call("GET", "/whoami", { secret: a.secret, env: { SHARDS: map } });
		expect(me.status).toBe(200);
		expect(me.headers.get("x-d1-bookmark")).toMatch(/^DB_1=/);
		expect((await call("GET", `/twins/${twin}`, { secret: a.secret, env: { SHARDS: map } })).body.description).toEqual({
			plate: "AB-1",
		});
		const written = await call("POST", "/twins", { secret: a.secret, body: {}, env: { SHARDS: map } });
		expect(written.status).toBe(201);
		expect(await rowCount(env.DB_1, "twins", "owner", a.account)).toBe(2);
		// A finished move cannot be aborted.
		expectError(await call("DELETE", movePath(bucket), { headers: admin }), 404, 404102);
	});

	it("loses no write answered 2xx of a writer that runs through the move", async () => {
		const a = await bootstrapOn("DB_0");
		const bucket = bucketOf(a);
		const map = flippedMap(bucket);
		let flip = false;
		let stop = false;
		const made: string[] = [];
		let refusals = 0;
		// A request in flight at the flip may fail as at any deploy: one the old map sends to
		// the source is refused there (503241, then 401 once the source's rows are gone).
		const writer = (async () => {
			while (!stop) {
				const flipping = flip;
				const res = await call("POST", "/twins", {
					secret: a.secret,
					body: {},
					...(flipping ? { env: { SHARDS: map } } : {}),
				});
				if (res.status === 201) made.push(res.body.uuid);
				else {
					if (res.status !== 401 || flipping) expectError(res, 503, 503241);
					refusals++;
				}
				// A pause between writes: calls into the Worker alone would leave the test's own
				// timers no turn.
				await new Promise((resolve) => setTimeout(resolve, 20));
			}
		})();
		await until(
			() => made.length,
			(n) => n >= 3,
			"the writer's first twins",
		);
		await moveTo(bucket, "DB_1");
		await settled(bucket, "copied");
		flip = true;
		await settled(bucket, "done", map);
		await until(
			() => made.length,
			(n) => n >= 6,
			"the writer's twins after the move",
		);
		stop = true;
		await writer;
		expect(refusals).toBeGreaterThan(0);
		const { results } = await env.DB_1.prepare("SELECT uuid FROM twins WHERE owner = ?").bind(a.account).all<{
			uuid: string;
		}>();
		expect(results.map((r) => r.uuid).sort()).toEqual([...made].sort());
		expect(await rowCount(env.DB_0, "twins", "owner", a.account)).toBe(0);
	});

	it("is undone by an abort before the flip: the copy goes, writes resume on the source", async () => {
		const a = await bootstrapOn("DB_0");
		const bucket = bucketOf(a);
		await newTwin(a.secret);
		await moveTo(bucket, "DB_1");
		await settled(bucket, "copied");
		expect(await rowCount(env.DB_1, "twins", "owner", a.account)).toBe(1);
		const aborted = await call("DELETE", movePath(bucket), { headers: admin });
		expect(aborted.status).toBe(200);
		expect(aborted.body.state).toBe("aborting");
		await settled(bucket, "aborted");
		expect(await rowCount(env.DB_1, "twins", "owner", a.account)).toBe(0);
		expect(await rowCount(env.DB_1, "accounts", "uuid", a.account)).toBe(0);
		expect(await rowCount(env.DB_0, "twins", "owner", a.account)).toBe(1);
		expect((await call("POST", "/twins", { secret: a.secret, body: {} })).status).toBe(201);
	});

	it("cannot be aborted once flipped", async () => {
		const a = await bootstrapOn("DB_0");
		const bucket = bucketOf(a);
		await moveTo(bucket, "DB_1");
		await settled(bucket, "copied");
		const map = flippedMap(bucket);
		const refused = await call("DELETE", movePath(bucket), { headers: admin, env: { SHARDS: map } });
		expectError(refused, 409, 409101);
		await settled(bucket, "done", map);
	});

	it("makes other accounts' writes into the bucket's rows wait: a subscription, a sticker copy, a public identity", async () => {
		const a = await bootstrapOn("DB_0");
		const b = await bootstrapOn("DB_1");
		const bucket = bucketOf(a);
		const granted = await call("PATCH", `/notifications/webhooks/access/accounts/${b.account}`, {
			secret: a.secret,
			body: { topics: ["news"] },
		});
		expect(granted.status).toBe(200);
		const bTwin = await newTwin(b.secret);
		const aTwin = await newTwin(a.secret);
		const bReader = (await userWithRules(b, { twin: "true", identity: "true" })).secret;

		await moveTo(bucket, "DB_1");
		// A public identity on A's twin lists B with the twin, in A's database: it waits; a
		// private one writes only in B's and goes through.
		const listed = await call("POST", `/twins/${aTwin}/identities`, {
			secret: bReader,
			body: { identities: { "RFID#b": { visibility: "true" } } },
		});
		expectError(listed, 503, 503241);
		expect(listed.headers.get("retry-after")).toBe("5");
		await attach(bReader, aTwin, { "SN#b": {} });
		// A's topics live in A's database: B's subscription waits.
		const subscribe = await call("POST", "/notifications/webhooks", {
			secret: b.secret,
			body: { topic: "news", account: a.account, callback_url: "https://example.com/hook" },
		});
		expectError(subscribe, 503, 503241);
		expect(subscribe.headers.get("retry-after")).toBe("5");
		// B's sticker for A's user is put at once; A's copy waits for the move.
		const put = await call("POST", `/twins/${bTwin}/stickers`, {
			secret: b.secret,
			body: { stickers: { red: { recipients: [a.user] } } },
		});
		expect(put.status, JSON.stringify(put.body)).toBe(201);
		await new Promise((resolve) => setTimeout(resolve, 2500));
		const copies = "SELECT count(*) AS n FROM sticker_recipients WHERE recipient = ?";
		expect((await env.DB_0.prepare(copies).bind(a.user).first<{ n: number }>())!.n).toBe(0);

		await call("DELETE", movePath(bucket), { headers: admin });
		await settled(bucket, "aborted");
		await until(
			() => env.DB_0.prepare(copies).bind(a.user).first<{ n: number }>(),
			(row) => row!.n === 1,
			"the sticker's copy once the move is over",
			10_000,
		);
	});

	it("makes an exchange that would provision a user wait, and lets it through once the move is over", async () => {
		const a = await bootstrapOn("DB_0");
		const bucket = bucketOf(a);
		const idp = await IdentityProvider.create();
		await addProvider(a, idp, { provisioning: { role: a.role } });
		const token = await idp.idToken({ sub: `new-${crypto.randomUUID()}` });
		await moveTo(bucket, "DB_1");
		const refused = await exchange(a.account, token);
		expectError(refused, 503, 503241);
		expect(refused.headers.get("retry-after")).toBe("5");
		await call("DELETE", movePath(bucket), { headers: admin });
		await settled(bucket, "aborted");
		const made = await exchange(a.account, token);
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		expect(made.body.provisioned).toBe(true);
	});

	it("refuses a bad bucket, an undeclared or current binding, and callers without the admin token", async () => {
		const a = await bootstrapOn("DB_1");
		const post = (body: unknown, headers = admin) => call("POST", "/admin/shards/moves", { headers, body });
		expectError(await post({ bucket: 256, to: "DB_0" }), 400, 400101);
		expectError(await post({ bucket: -1, to: "DB_0" }), 400, 400101);
		expectError(await post({ bucket: 3, to: "DB_7" }), 400, 400101);
		expectError(await post({ bucket: bucketOf(a), to: "DB_1" }), 409, 409101);
		expectError(await post({ bucket: 3, to: "DB_1" }, { authorization: "Bearer nope" }), 401, 401102);
		expectError(await call("GET", movePath(300), { headers: admin }), 404, 404102);
		expectError(await call("GET", "/admin/shards", {}), 401, 401101);
		const shards = await call("GET", "/admin/shards", { headers: admin });
		expect(shards.body).toEqual({ shards: "0-127:DB_0,128-255:DB_1", bindings: ["DB_0", "DB_1"] });
	});
});

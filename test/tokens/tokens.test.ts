import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { base64Url } from "../../src/base/crypto";
import { signJwt } from "../../src/base/jwt";
import { call, d1Cost, expectError, randomAddress } from "../support/requests";
import { bootstrap, createUser, issueSecret, member, role } from "../support/accounts";
import { newTwin, seedTwins } from "../support/twins";
import { confirmationUrl, pathOf, recordingQueue } from "../support/webhooks";
import { attachDoc } from "../docs/helpers";

// User Tokens through the Worker's fetch: what they are made from, how long they live, that
// they act as their user with the role as it is now, and every way to forge or widen one.

const encode = (value: unknown) => base64Url(new TextEncoder().encode(JSON.stringify(value)));
const soon = () => Date.now() / 1000 + 3600;

async function token(secret: string, body: Record<string, unknown> = {}) {
	const res = await call("POST", "/token", { secret, body });
	expect(res.status).toBe(201);
	return res.body as { token: string; options: string[]; validity_ts: number };
}

// A token this service never made: the claims of a real one, changed, signed as asked.
async function claimsOf(text: string) {
	return JSON.parse(
		new TextDecoder().decode(
			Uint8Array.from(atob(text.split(".")[1]!.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0)),
		),
	);
}

describe("create_user_token", () => {
	it("makes a token that acts as its user, raw or as a Bearer credential, and writes nothing", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/token", { secret: admin.secret, body: {} });
		expect(res.status).toBe(201);
		expect(res.body).toEqual({
			token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
			options: [],
			validity_ts: expect.any(Number),
		});
		expect(d1Cost(res, "rows_written")).toBe(0);
		const whoami = await call("GET", "/whoami", { secret: res.body.token });
		expect(whoami.body).toEqual({ account: admin.account, user: admin.user, role: admin.role });
		expect((await call("GET", "/whoami", { secret: `Bearer ${res.body.token}` })).status).toBe(200);
		const claims = await claimsOf(res.body.token);
		expect(Object.keys(claims).sort()).toEqual(["acc", "exp", "iat", "jti", "opt", "sec", "sub"]);
		expect(JSON.stringify(claims)).not.toContain(admin.secret);
	});

	it("lives a day at most, no longer than its secret, and as long as asked when shorter", async () => {
		const admin = await bootstrap();
		const day = Date.now() / 1000 + 86_400;
		for (const validity_ts of [undefined, null, day + 1000]) {
			const made = await token(admin.secret, validity_ts === undefined ? {} : { validity_ts });
			expect(Math.abs(made.validity_ts - day)).toBeLessThan(60);
		}
		const asked = Math.round(soon() * 1000) / 1000;
		expect((await token(admin.secret, { validity_ts: asked })).validity_ts).toBe(asked);
		const user = await createUser(admin);
		const ending = Math.round((Date.now() / 1000 + 600) * 1000) / 1000;
		const secret = await issueSecret(admin, user, ending);
		expect((await token(secret)).validity_ts).toBe(ending);
	});

	it("refuses a validity in the past, unknown fields, bad options and a bad or large secret_dict", async () => {
		const admin = await bootstrap();
		for (const body of [
			{ validity_ts: 1 },
			{ validity_ts: "soon" },
			{ unknown: true },
			{ options: ["delete"] },
			{ secret_dict: { "Bad-Key": 1 } },
			{ secret_dict: [] },
			{ secret_dict: { big: "x".repeat(2100) } },
		]) {
			expectError(await call("POST", "/token", { secret: admin.secret, body }), 400, 400101);
		}
	});

	it("is refused by a role whose statement leaves create_user_token out", async () => {
		const admin = await bootstrap();
		const narrow = await role(admin, { effect: "allow", actions: ["who_am_i"] });
		const { secret } = await member(admin, narrow);
		expectError(await call("POST", "/token", { secret, body: {} }), 403, 403101);
	});
});

describe("a token's life follows its secret, user and role", () => {
	it("dies with its secret, a replaced secret, its secret's expiry and its user", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		const made = (await token(secret)).token;
		expect((await call("GET", "/whoami", { secret: made })).status).toBe(200);
		// A redeemed PIN replaces the secret the token descends from.
		await issueSecret(admin, user);
		expectError(await call("GET", "/whoami", { secret: made }), 401, 401102);

		const again = await issueSecret(admin, user);
		const second = (await token(again)).token;
		expect(
			(
				await call("PATCH", `/users/${user}/secrets`, {
					secret: admin.secret,
					body: { validity_ts: Date.now() / 1000 - 1 },
				})
			).status,
		).toBe(200);
		expectError(await call("GET", "/whoami", { secret: second }), 401, 401103);

		const third = (await token(await issueSecret(admin, user))).token;
		expect((await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret: third }), 401, 401102);

		const fourth = (await token(await issueSecret(admin, user))).token;
		expect((await call("DELETE", `/users/${user}`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret: fourth }), 401, 401102);
	});

	it("takes a role change on its very next request", async () => {
		const admin = await bootstrap();
		const wide = await role(admin, { effect: "deny", actions: null });
		const user = await createUser(admin, wide);
		const made = (await token(await issueSecret(admin, user))).token;
		expect((await call("GET", "/whoami", { secret: made })).status).toBe(200);
		expect(
			(
				await call("PATCH", `/roles/${wide}`, {
					secret: admin.secret,
					body: { statement: { effect: "deny", actions: ["who_am_i"] } },
				})
			).status,
		).toBe(200);
		expectError(await call("GET", "/whoami", { secret: made }), 403, 403101);
	});

	it("sees another account's twin exactly as an absent one", async () => {
		const a = await bootstrap();
		const b = await bootstrap();
		const [twin] = await seedTwins(b.account, [{ site: "b" }]);
		const made = (await token(a.secret)).token;
		const foreign = await call("GET", `/twins/${twin}`, { secret: made });
		const absent = await call("GET", `/twins/${crypto.randomUUID()}`, { secret: made });
		expectError(foreign, 404, 404102);
		expect(foreign.body.description).toBe(absent.body.description);
		expect(d1Cost(foreign, "rows_read")).toBe(d1Cost(absent, "rows_read"));
	});
});

describe("forged tokens", () => {
	it("refuses a changed payload, another key, alg none, another header, a bad shape and an oversized token", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const made = (await token(admin.secret)).token;
		const [header, , signature] = made.split(".");
		const claims = await claimsOf(made);
		const widened = `${header}.${encode({ ...claims, sub: other.user, acc: other.account })}.${signature}`;
		const resigned = await signJwt("another-key-of-at-least-32-characters!!", claims);
		const none = `${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.`;
		const noneSigned = `${encode({ alg: "none", typ: "JWT" })}.${encode(claims)}.${signature}`;
		const hs512 = `${encode({ alg: "HS512", typ: "JWT" })}.${encode(claims)}.${signature}`;
		const oversized = await signJwt(env.TOKEN_KEY, { ...claims, pad: "x".repeat(4096) });
		for (const forged of [
			widened,
			resigned,
			none,
			noneSigned,
			hs512,
			oversized,
			`${made}.x`,
			made.slice(0, -2),
			"a.b.c",
		]) {
			const res = await call("GET", "/whoami", { secret: forged });
			expect([forged.slice(0, 24), res.status, res.body.subcode]).toEqual([forged.slice(0, 24), 401, 401102]);
			expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
		}
	});

	it("refuses a well-signed token whose claims do not match its secret's row", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const claims = await claimsOf((await token(admin.secret)).token);
		for (const changed of [{ sub: other.user }, { acc: other.account }, { sec: "0".repeat(64) }]) {
			const forged = await signJwt(env.TOKEN_KEY, { ...claims, ...changed });
			expectError(await call("GET", "/whoami", { secret: forged }), 401, 401102);
		}
	});

	it("counts as failed authentications of its address, like a wrong secret", async () => {
		const admin = await bootstrap();
		const headers = { "cf-connecting-ip": randomAddress() };
		const forged = await signJwt("another-key-of-at-least-32-characters!!", { sub: admin.user });
		const statuses: number[] = [];
		// 30 a minute; a run that crosses into the next minute gets a second allowance at most.
		while (statuses.at(-1) !== 429 && statuses.length <= 61)
			statuses.push((await call("GET", "/whoami", { secret: forged, headers })).status);
		expect(statuses.at(-1)).toBe(429);
		expect(new Set(statuses.slice(0, -1))).toEqual(new Set([401]));
		expect(statuses.length).toBeGreaterThan(30);
	});

	it("answers an expired token 401103", async () => {
		const admin = await bootstrap();
		const claims = await claimsOf((await token(admin.secret)).token);
		const expired = await signJwt(env.TOKEN_KEY, { ...claims, exp: Date.now() / 1000 - 1 });
		expectError(await call("GET", "/whoami", { secret: expired }), 401, 401103);
	});
});

describe("what a token may make", () => {
	it("makes a token from a token only with its create option, never wider, never longer", async () => {
		const admin = await bootstrap();
		const bare = (await token(admin.secret)).token;
		expectError(await call("POST", "/token", { secret: bare, body: {} }), 403, 403105);

		const parentExp = Math.round(soon() * 1000) / 1000;
		const parent = await token(admin.secret, {
			options: ["create"],
			secret_dict: { site: "north" },
			validity_ts: parentExp,
		});
		const child = await call("POST", "/token", { secret: parent.token, body: {} });
		expect(child.status).toBe(201);
		expect(child.body.options).toEqual([]);
		expect(child.body.validity_ts).toBe(parentExp);
		expect((await claimsOf(child.body.token)).dict).toEqual({ site: "north" });
		expect(
			(
				await call("POST", "/token", {
					secret: parent.token,
					body: { options: ["create", "create"], secret_dict: { site: "north" } },
				})
			).body.options,
		).toEqual(["create"]);

		expectError(await call("POST", "/token", { secret: parent.token, body: { options: ["refresh"] } }), 403, 403102);
		expectError(
			await call("POST", "/token", { secret: parent.token, body: { secret_dict: { site: "south" } } }),
			403,
			403102,
		);
		expectError(await call("POST", "/token", { secret: parent.token, body: { secret_dict: {} } }), 403, 403102);
	});

	it("refreshes only a token with the refresh option, keeping its options and dictionary", async () => {
		const admin = await bootstrap();
		expectError(await call("POST", "/token/refresh", { secret: admin.secret, body: {} }), 403, 403105);
		const plain = (await token(admin.secret)).token;
		expectError(await call("POST", "/token/refresh", { secret: plain, body: {} }), 403, 403105);

		const short = Math.round((Date.now() / 1000 + 60) * 1000) / 1000;
		const refreshable = await token(admin.secret, {
			options: ["refresh"],
			secret_dict: { site: "north" },
			validity_ts: short,
		});
		const refreshed = await call("POST", "/token/refresh", { secret: refreshable.token, body: {} });
		expect(refreshed.status).toBe(201);
		expect(Object.keys(refreshed.body).sort()).toEqual(["token", "validity_ts"]);
		// Outliving its parent is what refreshing is for; the parent stays valid.
		expect(refreshed.body.validity_ts).toBeGreaterThan(short + 3600);
		const claims = await claimsOf(refreshed.body.token);
		expect([claims.opt, claims.dict, claims.sub]).toEqual([["refresh"], { site: "north" }, admin.user]);
		expect((await call("GET", "/whoami", { secret: refreshable.token })).status).toBe(200);
	});

	it("never issues a PIN, whatever the role", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const made = (await token(admin.secret, { options: ["create", "refresh"] })).token;
		const res = await call("POST", `/users/${user}/secrets`, { secret: made, body: {} });
		expectError(res, 403, 403105);
		expect(d1Cost(res, "rows_written")).toBe(0);
	});
});

describe("nothing made with a token outlives it", () => {
	const shortToken = async (secret: string) =>
		token(secret, { validity_ts: Math.round((Date.now() / 1000 + 600) * 1000) / 1000 });

	it("ends a webhook subscription by the token's expiry, refreshes included; a secret's lasts as asked", async () => {
		const admin = await bootstrap();
		const short = await shortToken(admin.secret);
		const subscribe = (secret: string) =>
			call("POST", "/notifications/webhooks", {
				secret,
				body: { topic: "alerts", callback_url: "https://example.com/hook", expires: 604_800 },
				env: { CALLBACK_POLICY: "any", WEBHOOKS: recordingQueue().binding },
			});
		const made = await subscribe(short.token);
		expect(made.status).toBe(201);
		expect(made.body.subscription.validity_ts).toBe(short.validity_ts);
		const url = await confirmationUrl(made.body.subscription.uuid);
		const refreshed = await call("PATCH", pathOf(url), { body: { expires: 604_800 } });
		expect(refreshed.status).toBe(200);
		expect(refreshed.body.subscription.validity_ts).toBe(short.validity_ts);
		const bySecret = await subscribe(admin.secret);
		expect(bySecret.body.subscription.validity_ts).toBeGreaterThan(Date.now() / 1000 + 604_000);
	});

	it("ends an upload URL and a download URL by the token's expiry", async () => {
		const admin = await bootstrap();
		const short = await shortToken(admin.secret);
		const upload = await call("POST", "/cache", { secret: short.token, body: {} });
		expect(upload.status).toBe(201);
		expect(upload.body.validity_ts).toBe(short.validity_ts);
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "a.txt", new Uint8Array([1, 2, 3]));
		const week = Math.floor(Date.now() / 1000) + 6 * 86_400;
		const read = await call("GET", `/twins/${twin}/docs/a.txt?download=true&validity_ts=${week}`, {
			secret: short.token,
		});
		expect(read.status).toBe(200);
		expect(read.body.download.validity_ts).toBe(short.validity_ts);
		const bySecret = await call("GET", `/twins/${twin}/docs/a.txt?download=true&validity_ts=${week}`, {
			secret: admin.secret,
		});
		expect(bySecret.body.download.validity_ts).toBe(week);
	});
});

import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { claimsOf, EXCHANGE, exchange, exchanged, federated, linksPath, signIn, traceOf, whoami } from "./helpers";
import { nowSeconds } from "./identity-provider";

// exchange_user_token: an ID token of a trusted provider traded for a User Token of the linked
// user, how long that token lives, what it carries, and what it acts as.

const close = (actual: number, expected: number, within = 5) =>
	expect(Math.abs(actual - expected), `${actual} vs ${expected}`).toBeLessThan(within);

describe("exchange_user_token", () => {
	it("answers 201 a User Token of the linked user, which acts as that user", async () => {
		const world = await federated();
		const res = await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }));
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(res.body).toEqual({
			token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
			options: [],
			validity_ts: expect.any(Number),
			account: world.admin.account,
			user: world.user,
			provisioned: false,
		});
		close(res.body.validity_ts, Date.now() / 1000 + 3600);
		const me = await whoami(res.body.token);
		expect(me.status).toBe(200);
		expect(me.body).toEqual({ account: world.admin.account, user: world.user, role: world.admin.role });
		expect((await call("GET", "/whoami", { secret: `Bearer ${res.body.token}` })).status).toBe(200);
		expect(res.headers.get("access-control-allow-origin")).toBe("*");
	});

	it("carries the federated claims and no secret's; trace names the provider and subject", async () => {
		const world = await federated();
		const made = await signIn(world, { options: ["refresh"] });
		const claims = claimsOf(made.token);
		// `dict` may be left out when the provider maps no claims; nothing of a secret is there.
		expect(Object.keys(claims)).toEqual(
			expect.arrayContaining(["acc", "end", "exp", "iat", "jti", "lnk", "opt", "pvu", "prv", "sub"]),
		);
		expect(
			Object.keys(claims).filter(
				(name) => !["acc", "dict", "end", "exp", "iat", "jti", "lnk", "opt", "pvu", "prv", "sub"].includes(name),
			),
		).toEqual([]);
		expect(claims).toMatchObject({
			sub: world.user,
			acc: world.admin.account,
			prv: world.provider.uuid,
			pvu: world.provider.updated_ts,
			opt: ["refresh"],
		});
		expect(claims.exp).toBe(made.validity_ts);
		expect(claims.end).toBe(made.validity_ts);
		const trace = await traceOf(made.token);
		expect(trace).toMatchObject({ account: world.admin.account, user: world.user, role: world.admin.role, dict: {} });
		expect(trace.credential).toEqual({
			type: "token",
			fingerprint: null,
			validity_ts: made.validity_ts,
			options: ["refresh"],
			provider: world.provider.uuid,
			subject: world.subject,
		});
	});

	it("needs no credential and ignores the Authorization header, whatever it holds", async () => {
		const world = await federated();
		const other = await bootstrap();
		const idToken = await world.idp.idToken({ sub: world.subject });
		for (const secret of [other.secret, "x".repeat(64), "Bearer nonsense"]) {
			const res = await call("POST", EXCHANGE, {
				secret,
				body: { account: world.admin.account, subject_token: idToken },
			});
			expect(res.status, JSON.stringify(res.body)).toBe(201);
			expect(res.body.user).toBe(world.user);
		}
	});

	it("takes the standard grant and token types, an aud list holding an audience, and a token without kid", async () => {
		const world = await federated();
		const token = await world.idp.idToken(
			{ sub: world.subject, aud: ["someone-else", world.idp.audience] },
			{ kid: null },
		);
		for (const extra of [
			{ grant_type: "urn:ietf:params:oauth:grant-type:token-exchange" },
			{ subject_token_type: "urn:ietf:params:oauth:token-type:id_token" },
			{
				subject_token_type: "urn:ietf:params:oauth:token-type:jwt",
				grant_type: "urn:ietf:params:oauth:grant-type:token-exchange",
			},
		]) {
			expect((await exchanged(world.admin.account, token, extra)).user).toBe(world.user);
		}
	});

	it("ignores Idempotency-Key: each answer is a new credential", async () => {
		const world = await federated();
		const idToken = await world.idp.idToken({ sub: world.subject });
		const headers = { "idempotency-key": crypto.randomUUID() };
		const [a, b] = [
			await exchange(world.admin.account, idToken, {}, headers),
			await exchange(world.admin.account, idToken, {}, headers),
		];
		expect([a.status, b.status]).toEqual([201, 201]);
		expect(a.body.token).not.toBe(b.body.token);
		expect(b.headers.get("idempotent-replayed")).toBeNull();
	});

	it("links by the provider's subject_claim", async () => {
		const world = await federated({ fields: { subject_claim: "email" }, subject: "ann@example.com" });
		const made = await exchanged(
			world.admin.account,
			await world.idp.idToken({ sub: "opaque-id", email: "ann@example.com" }),
		);
		expect(made.user).toBe(world.user);
		expect((await traceOf(made.token)).credential.subject).toBe("ann@example.com");
	});
});

describe("the validity of the token an exchange gives", () => {
	it("is the earliest of the body's, now + token_validity, exp + exp_extension and now + 86400", async () => {
		const now = nowSeconds();
		const cases: [Record<string, unknown>, Record<string, unknown>, Record<string, unknown>, number][] = [
			// fields, claims, body, expected validity
			[{}, {}, {}, now + 3600],
			[{ token_validity: 600 }, {}, {}, now + 600],
			[{}, { exp: now + 120 }, {}, now + 120],
			[{ exp_extension: 60 }, { exp: now + 120 }, {}, now + 180],
			[{}, {}, { validity_ts: now + 300 }, now + 300],
			[{ token_validity: 86400, exp_extension: 86400 }, { exp: now + 2 * 86400 }, {}, now + 86400],
			[{ token_validity: 86400 }, { exp: now + 2 * 86400 }, { validity_ts: now + 3 * 86400 }, now + 86400],
			[{ token_validity: 86400 }, { exp: now + 2 * 86400 }, { validity_ts: null }, now + 86400],
		];
		for (const [fields, claims, body, expected] of cases) {
			const world = await federated({ fields });
			const made = await signIn(world, body, claims);
			expect([JSON.stringify([fields, body]), Math.abs(made.validity_ts - expected) < 5]).toEqual([
				JSON.stringify([fields, body]),
				true,
			]);
		}
	});

	it("takes an exp within clock_skew when exp_extension keeps the token alive", async () => {
		const now = nowSeconds();
		const world = await federated({ fields: { clock_skew: 120, exp_extension: 600 } });
		const made = await signIn(world, {}, { exp: now - 30, iat: now - 3600 });
		close(made.validity_ts, now - 30 + 600);
		expect((await whoami(made.token)).status).toBe(200);
	});

	it("gives the options asked", async () => {
		const world = await federated();
		const made = await signIn(world, { options: ["create", "refresh", "create"] });
		expect([...made.options].sort()).toEqual(["create", "refresh"]);
	});
});

describe("dict_claims", () => {
	it("maps claims into the token's DICT, leaving absent claims out; the header cannot override it", async () => {
		const world = await federated({
			fields: { dict_claims: { email: "email", groups: "groups", tenant: "tid", verified: "email_verified" } },
		});
		const made = await signIn(
			world,
			{},
			{ email: "ann@example.com", groups: ["ops", "dev"], email_verified: true, other: "not mapped" },
		);
		const dict = { email: "ann@example.com", groups: ["ops", "dev"], verified: true };
		expect(claimsOf(made.token).dict).toEqual(dict);
		expect((await traceOf(made.token)).dict).toEqual(dict);
		const header = btoa(JSON.stringify({ email: "mallory@example.com" }));
		expect(
			(await call("POST", "/trace", { secret: made.token, headers: { "x-trustedtwin": header } })).body.dict,
		).toEqual(dict);
	});

	it("is read by the user's rules as DICT", async () => {
		const world = await federated({ fields: { dict_claims: { site: "site" } } });
		// The linked user's role sees twins of its site only.
		const res = await call("POST", "/roles", {
			secret: world.admin.secret,
			body: { name: "Site", rules: { twin: "TWIN.site == DICT.site" } },
		});
		expect(
			(await call("PATCH", `/users/${world.user}`, { secret: world.admin.secret, body: { role: res.body.uuid } }))
				.status,
		).toBe(200);
		const north = (
			await call("POST", "/twins", { secret: world.admin.secret, body: { description: { site: "north" } } })
		).body.uuid;
		const south = (
			await call("POST", "/twins", { secret: world.admin.secret, body: { description: { site: "south" } } })
		).body.uuid;
		const made = await signIn(world, {}, { site: "north" });
		expect((await call("GET", `/twins/${north}`, { secret: made.token })).status).toBe(200);
		expect((await call("GET", `/twins/${south}`, { secret: made.token })).status).toBe(404);
	});

	it("a link made again is another link: tokens of the old one do not name it", async () => {
		const world = await federated();
		const before = claimsOf((await signIn(world)).token).lnk;
		expect(
			(await call("DELETE", linksPath(world.user, world.provider.uuid), { secret: world.admin.secret })).status,
		).toBe(200);
		expect(
			(
				await call("POST", linksPath(world.user), {
					secret: world.admin.secret,
					body: { provider: world.provider.uuid, subject: world.subject },
				})
			).status,
		).toBe(201);
		expect(claimsOf((await signIn(world)).token).lnk).not.toBe(before);
	});
});

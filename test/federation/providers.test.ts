import { exportJWK, generateKeyPair } from "jose";
import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, createUser, member, role } from "../support/accounts";
import {
	ANY,
	addProvider,
	link,
	linksPath,
	PROVIDERS,
	providerBody,
	providerPath,
	RECORD_KEYS,
	updateProvider,
} from "./helpers";
import { IdentityProvider, makeKey } from "./identity-provider";

// The identity providers an account trusts: made, listed, read, changed and deleted by its
// administrator, each field checked, another account's provider answered as an absent one.

type Answer = Awaited<ReturnType<typeof call>>;

function expectInvalid(res: Answer, path?: string | RegExp) {
	expectError(res, 400, 400101);
	if (path === undefined) return;
	const paths = (res.body.details ?? []).map((detail: { path: string }) => detail.path);
	expect(paths, JSON.stringify(res.body)).toContainEqual(typeof path === "string" ? path : expect.stringMatching(path));
}

describe("create_identity_provider", () => {
	it("answers 201 the record, its keys in order, with the defaults filled", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create(["RS256"]);
		const res = await call("POST", PROVIDERS, {
			secret: admin.secret,
			body: { issuer: idp.issuer, audiences: [idp.audience, "other", idp.audience], jwks: idp.jwks() },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(Object.keys(res.body)).toEqual(RECORD_KEYS);
		expect(res.body).toEqual({
			uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
			issuer: idp.issuer,
			audiences: [idp.audience, "other"],
			algorithms: ["RS256"],
			jwks_uri: null,
			jwks: idp.jwks(),
			clock_skew: 60,
			subject_claim: "sub",
			dict_claims: {},
			provisioning: null,
			token_validity: 3600,
			exp_extension: 0,
			created_ts: expect.any(Number),
			updated_ts: res.body.created_ts,
		});
		expect(Math.abs(res.body.created_ts - Date.now() / 1000)).toBeLessThan(60);
	});

	it("keeps every field given, a public https jwks_uri as its normalized URL, and provisioning's name_claim default", async () => {
		const admin = await bootstrap();
		const provisioner = await role(admin, { effect: "allow", actions: ["who_am_i", "exchange_user_token"] });
		const body = {
			issuer: "https://login.example.com/tenant",
			audiences: ["app"],
			algorithms: ["ES256", "EdDSA", "RS256"],
			jwks_uri: "HTTPS://Login.Example.com:443/keys",
			clock_skew: 0,
			subject_claim: "oid",
			dict_claims: { email: "email", tenant_id: "tid" },
			provisioning: { role: provisioner },
			token_validity: 60,
			exp_extension: 86400,
		};
		const res = await call("POST", PROVIDERS, { secret: admin.secret, body });
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(Object.keys(res.body)).toEqual(RECORD_KEYS);
		expect(res.body).toMatchObject({
			...body,
			jwks_uri: "https://login.example.com/keys",
			jwks: null,
			provisioning: { role: provisioner, name_claim: "name" },
		});
		const named = await call("POST", PROVIDERS, {
			secret: admin.secret,
			body: {
				...body,
				issuer: "https://other.example.com/",
				provisioning: { role: provisioner, name_claim: "preferred_username" },
			},
		});
		expect(named.body.provisioning).toEqual({ role: provisioner, name_claim: "preferred_username" });
	});

	it("refuses unknown fields and each invalid field with 400101 naming it", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create(["RS256"]);
		const good = providerBody(idp);
		const cases: [Record<string, unknown>, string | RegExp | undefined][] = [
			[{ ...good, unknown: 1 }, "unknown"],
			[{ ...good, issuer: undefined }, "issuer"],
			[{ ...good, issuer: "" }, "issuer"],
			[{ ...good, issuer: "x".repeat(513) }, "issuer"],
			[{ ...good, audiences: undefined }, /^audiences/],
			[{ ...good, audiences: [] }, /^audiences/],
			[{ ...good, audiences: "app" }, /^audiences/],
			[{ ...good, audiences: [""] }, /^audiences/],
			[{ ...good, audiences: ["x".repeat(257)] }, /^audiences/],
			[{ ...good, audiences: Array.from({ length: 11 }, (_, i) => `a${i}`) }, /^audiences/],
			[{ ...good, algorithms: [] }, /^algorithms/],
			[{ ...good, algorithms: ["HS256"] }, /^algorithms/],
			[{ ...good, algorithms: ["PS256"] }, /^algorithms/],
			[{ ...good, algorithms: ["RS512"] }, /^algorithms/],
			[{ ...good, algorithms: ["none"] }, /^algorithms/],
			[{ ...good, clock_skew: -1 }, "clock_skew"],
			[{ ...good, clock_skew: 301 }, "clock_skew"],
			[{ ...good, clock_skew: 1.5 }, "clock_skew"],
			[{ ...good, subject_claim: "1sub" }, "subject_claim"],
			[{ ...good, subject_claim: "a b" }, "subject_claim"],
			[{ ...good, subject_claim: `a${"b".repeat(64)}` }, "subject_claim"],
			[{ ...good, dict_claims: { "Bad-Key": "email" } }, /^dict_claims/],
			[{ ...good, dict_claims: { email: "not a claim" } }, /^dict_claims/],
			[{ ...good, dict_claims: { email: 5 } }, /^dict_claims/],
			[
				{ ...good, dict_claims: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, `c${i}`])) },
				/^dict_claims/,
			],
			[{ ...good, dict_claims: [] }, /^dict_claims/],
			[{ ...good, provisioning: {} }, /^provisioning/],
			[{ ...good, provisioning: { role: 5 } }, /^provisioning/],
			[{ ...good, provisioning: { role: admin.role, name_claim: "a b" } }, /^provisioning/],
			[{ ...good, provisioning: { role: admin.role, extra: true } }, /^provisioning/],
			[{ ...good, token_validity: 59 }, "token_validity"],
			[{ ...good, token_validity: 86401 }, "token_validity"],
			[{ ...good, token_validity: 600.5 }, "token_validity"],
			[{ ...good, exp_extension: -1 }, "exp_extension"],
			[{ ...good, exp_extension: 86401 }, "exp_extension"],
			// Exactly one of jwks and jwks_uri.
			[{ ...good, jwks_uri: "https://login.example.com/keys" }, undefined],
			[{ ...good, jwks: undefined }, undefined],
			[{ ...good, jwks: null, jwks_uri: null }, undefined],
		];
		for (const [body, path] of cases) {
			const res = await call("POST", PROVIDERS, { secret: admin.secret, body });
			expect([JSON.stringify(body).slice(0, 80), res.status]).toEqual([JSON.stringify(body).slice(0, 80), 400]);
			expectInvalid(res, path);
		}
		expectError(await call("POST", PROVIDERS, { secret: admin.secret, body: "{not json" }), 400, 400102);
		// Nothing was made.
		expect((await call("GET", PROVIDERS, { secret: admin.secret })).body).toEqual({ providers: {} });
	});

	it("refuses a JWK Set holding a private member, a symmetric key, a repeated kid or a key WebCrypto refuses, at its index", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create(["RS256", "ES256"]);
		const [rsa, ec] = idp.keys;
		// A 1024-bit modulus (the first half of a 2048-bit one's bytes), which WebCrypto imports.
		const weakRsa = { ...rsa!.publicJwk, n: rsa!.publicJwk.n!.slice(0, 171), kid: "weak" };
		const p384 = { ...(await exportJWK((await generateKeyPair("ES384")).publicKey)), kid: "p384" };
		const cases: [unknown[], string][] = [
			[[{ ...rsa!.privateJwk }], "jwks.keys.0"],
			[[ec!.publicJwk, { ...rsa!.publicJwk, d: rsa!.privateJwk.d }], "jwks.keys.1"],
			[[{ ...rsa!.publicJwk, p: rsa!.privateJwk.p }], "jwks.keys.0"],
			[[{ ...rsa!.publicJwk, q: rsa!.privateJwk.q }], "jwks.keys.0"],
			[[{ ...ec!.privateJwk }], "jwks.keys.0"],
			[[{ kty: "oct", k: "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0", kid: "sym" }], "jwks.keys.0"],
			[[rsa!.publicJwk, { ...ec!.publicJwk, kid: rsa!.kid }], "jwks.keys.1"],
			[[weakRsa], "jwks.keys.0"],
			[[p384], "jwks.keys.0"],
			// A point that is not on the curve.
			[[{ ...ec!.publicJwk, x: ec!.publicJwk.y }], "jwks.keys.0"],
			[[{ ...rsa!.publicJwk, kty: "EC" }], "jwks.keys.0"],
		];
		for (const [keys, path] of cases) {
			const res = await call("POST", PROVIDERS, { secret: admin.secret, body: providerBody(idp, { jwks: { keys } }) });
			expect([path, JSON.stringify(keys).slice(0, 60), res.status]).toEqual([
				path,
				JSON.stringify(keys).slice(0, 60),
				400,
			]);
			expectInvalid(res, path);
		}
		const many = await Promise.all(Array.from({ length: 51 }, (_, i) => makeKey("ES256", `k${i}`)));
		expectInvalid(
			await call("POST", PROVIDERS, {
				secret: admin.secret,
				body: providerBody(idp, { jwks: { keys: many.map((k) => k.publicJwk) } }),
			}),
			/^jwks/,
		);
		expectInvalid(
			await call("POST", PROVIDERS, { secret: admin.secret, body: providerBody(idp, { jwks: { keys: [] } }) }),
			/^jwks/,
		);
		expectInvalid(
			await call("POST", PROVIDERS, { secret: admin.secret, body: providerBody(idp, { jwks: [rsa!.publicJwk] }) }),
			/^jwks/,
		);
		// Fifty keys are fine.
		const fifty = await call("POST", PROVIDERS, {
			secret: admin.secret,
			body: providerBody(idp, { jwks: { keys: many.slice(0, 50).map((k) => k.publicJwk) }, algorithms: ["ES256"] }),
		});
		expect(fifty.status, JSON.stringify(fifty.body)).toBe(201);
	});

	it("checks jwks_uri as a callback URL: loopback refused under the public policy, no userinfo, 512 characters", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		const post = (jwks_uri: string, env?: typeof ANY) =>
			call("POST", PROVIDERS, { secret: admin.secret, body: providerBody(idp, { jwks_uri, jwks: undefined }), env });
		for (const uri of [
			idp.jwksUri,
			"http://idp.example.com/keys",
			"https://10.0.0.1/keys",
			"https://[::1]/keys",
			"not a url",
			"ftp://idp.example.com/keys",
		]) {
			expectInvalid(await post(uri), "jwks_uri");
		}
		expectInvalid(await post("https://user:pw@idp.example.com/keys", ANY), "jwks_uri");
		expectInvalid(await post(`https://idp.example.com/${"k".repeat(512)}`, ANY), "jwks_uri");
		// The "any" policy takes the loopback receiver, stored as its normalized URL and not fetched.
		const made = await post(idp.jwksUri, ANY);
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		expect([made.body.jwks_uri, made.body.jwks]).toEqual([new URL(idp.jwksUri).href, null]);
		expect(await idp.fetches()).toBe(0);
	});

	it("is the administrator's alone: a role allowing everything but with a rule is refused 403102", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		const ruled = await member(
			admin,
			await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.open == true" }),
		);
		const res = await call("POST", PROVIDERS, { secret: ruled.secret, body: providerBody(idp) });
		expectError(res, 403, 403102);
		const narrow = await member(admin, await role(admin, { effect: "allow", actions: ["get_identity_providers"] }));
		expectError(await call("POST", PROVIDERS, { secret: narrow.secret, body: providerBody(idp) }), 403, 403101);
		// Another user whose role allows everything with null rules is an administrator too.
		const second = await member(admin, await role(admin, { effect: "deny", actions: [] }));
		expect((await call("POST", PROVIDERS, { secret: second.secret, body: providerBody(idp) })).status).toBe(201);
		// A User Token of the administrator acts as the administrator.
		const token = (await call("POST", "/token", { secret: admin.secret, body: {} })).body.token;
		expect(
			(await call("POST", PROVIDERS, { secret: token, body: providerBody(await IdentityProvider.create()) })).status,
		).toBe(201);
	});

	it("refuses an issuer already configured in the account (409101), not in another account", async () => {
		const [admin, other] = [await bootstrap(), await bootstrap()];
		const idp = await IdentityProvider.create();
		await addProvider(admin, idp);
		const again = await call("POST", PROVIDERS, {
			secret: admin.secret,
			body: providerBody(idp, { audiences: ["another"] }),
		});
		expectError(again, 409, 409101);
		await addProvider(other, idp);
	});

	it("stops at MAX_IDENTITY_PROVIDERS (20) with 409261", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		for (let i = 0; i < 20; i++) {
			const res = await call("POST", PROVIDERS, {
				secret: admin.secret,
				body: providerBody(idp, { issuer: `https://idp-${i}.example.com/` }),
			});
			expect([i, res.status]).toEqual([i, 201]);
		}
		expectError(
			await call("POST", PROVIDERS, {
				secret: admin.secret,
				body: providerBody(idp, { issuer: "https://one-more.example.com/" }),
			}),
			409,
			409261,
		);
		expect(Object.keys((await call("GET", PROVIDERS, { secret: admin.secret })).body.providers)).toHaveLength(20);
	});

	it("refuses a provisioning role of another account, or none, with 404102", async () => {
		const [admin, other] = [await bootstrap(), await bootstrap()];
		const idp = await IdentityProvider.create();
		for (const provisioning of [{ role: other.role }, { role: crypto.randomUUID() }]) {
			expectError(
				await call("POST", PROVIDERS, { secret: admin.secret, body: providerBody(idp, { provisioning }) }),
				404,
				404102,
			);
		}
	});
});

describe("get_identity_providers and get_identity_provider", () => {
	it("lists the account's providers by uuid, {} when none, and reads one", async () => {
		const admin = await bootstrap();
		expect((await call("GET", PROVIDERS, { secret: admin.secret })).body).toEqual({ providers: {} });
		const [a, b] = [
			await addProvider(admin, await IdentityProvider.create()),
			await addProvider(admin, await IdentityProvider.create(["EdDSA"])),
		];
		const list = await call("GET", PROVIDERS, { secret: admin.secret });
		expect(list.status).toBe(200);
		expect(list.body).toEqual({
			providers: Object.fromEntries(
				[a, b].map((p) => [p.uuid, { issuer: p.issuer, created_ts: p.created_ts, updated_ts: p.updated_ts }]),
			),
		});
		const one = await call("GET", providerPath(b.uuid), { secret: admin.secret });
		expect(one.status).toBe(200);
		expect(Object.keys(one.body)).toEqual(RECORD_KEYS);
		expect(one.body).toEqual(b);
		// Another account lists none of them.
		expect((await call("GET", PROVIDERS, { secret: (await bootstrap()).secret })).body).toEqual({ providers: {} });
	});

	it("answers another account's provider exactly as an absent one, headers and Server-Timing included", async () => {
		const [first, second] = [await bootstrap(), await bootstrap()];
		const provider = await addProvider(first, await IdentityProvider.create());
		const absent = crypto.randomUUID();
		for (const [method, body] of [["GET"], ["PATCH", { clock_skew: 5 }], ["DELETE"]] as [string, unknown?][]) {
			const foreign = await call(method, providerPath(provider.uuid), { secret: second.secret, body });
			const none = await call(method, providerPath(absent), { secret: second.secret, body });
			expectError(foreign, 404, 404102);
			expect(fingerprint(foreign, (text) => text.replaceAll(provider.uuid, absent))).toEqual(fingerprint(none));
		}
		// The provider is as it was.
		expect((await call("GET", providerPath(provider.uuid), { secret: first.secret })).body).toEqual(provider);
	});
});

describe("update_identity_provider", () => {
	it("replaces the fields given, switches between jwks and jwks_uri, bumps updated_ts", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create(["RS256", "ES256"]);
		const made = await addProvider(admin, idp);
		const changed = await updateProvider(admin, made.uuid, { clock_skew: 10, audiences: ["x", "x", "y"] });
		expect(changed.status, JSON.stringify(changed.body)).toBe(200);
		expect(Object.keys(changed.body)).toEqual(RECORD_KEYS);
		expect(changed.body).toEqual({ ...made, clock_skew: 10, audiences: ["x", "y"], updated_ts: expect.any(Number) });
		expect(changed.body.updated_ts).toBeGreaterThan(made.updated_ts);
		expect(changed.body.created_ts).toBe(made.created_ts);

		const remote = await updateProvider(admin, made.uuid, { jwks_uri: idp.jwksUri });
		expect(remote.status, JSON.stringify(remote.body)).toBe(200);
		expect([remote.body.jwks_uri, remote.body.jwks]).toEqual([new URL(idp.jwksUri).href, null]);
		const inline = await updateProvider(admin, made.uuid, { jwks: idp.jwks() });
		expect([inline.body.jwks_uri, inline.body.jwks]).toEqual([null, idp.jwks()]);
		expect((await call("GET", providerPath(made.uuid), { secret: admin.secret })).body).toEqual(inline.body);
	});

	it("needs a field, refuses both key sources, unknown fields and what create refuses", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		const made = await addProvider(admin, idp);
		expectInvalid(await updateProvider(admin, made.uuid, {}));
		expectInvalid(await updateProvider(admin, made.uuid, { jwks: idp.jwks(), jwks_uri: idp.jwksUri }));
		expectInvalid(await updateProvider(admin, made.uuid, { unknown: 1 }), "unknown");
		expectInvalid(await updateProvider(admin, made.uuid, { clock_skew: 301 }), "clock_skew");
		expectInvalid(await updateProvider(admin, made.uuid, { jwks: { keys: [idp.keys[0]!.privateJwk] } }), "jwks.keys.0");
		expectInvalid(await updateProvider(admin, made.uuid, { jwks: null }));
		expectInvalid(
			await call("PATCH", providerPath(made.uuid), { secret: admin.secret, body: { jwks_uri: idp.jwksUri } }),
			"jwks_uri",
		);
		expectError(await updateProvider(admin, made.uuid, { provisioning: { role: crypto.randomUUID() } }), 404, 404102);
		const other = await addProvider(admin, await IdentityProvider.create());
		expectError(await updateProvider(admin, made.uuid, { issuer: other.issuer }), 409, 409101);
		expect((await call("GET", providerPath(made.uuid), { secret: admin.secret })).body).toEqual(made);
		expectError(await updateProvider(admin, crypto.randomUUID(), { clock_skew: 1 }), 404, 404102);
	});

	it("is the administrator's alone (403102)", async () => {
		const admin = await bootstrap();
		const made = await addProvider(admin, await IdentityProvider.create());
		const ruled = await member(admin, await role(admin, { effect: "deny", actions: null }, { identity: "true" }));
		expectError(
			await call("PATCH", providerPath(made.uuid), { secret: ruled.secret, body: { clock_skew: 1 } }),
			403,
			403102,
		);
		expectError(await call("DELETE", providerPath(made.uuid), { secret: ruled.secret }), 403, 403102);
		// Reading is not.
		expect((await call("GET", providerPath(made.uuid), { secret: ruled.secret })).status).toBe(200);
		expect((await call("GET", PROVIDERS, { secret: ruled.secret })).status).toBe(200);
	});
});

describe("delete_identity_provider", () => {
	it("answers the record as it was, and deletes it and its links", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		const made = await addProvider(admin, idp);
		const user = await createUser(admin);
		await link(admin.secret, user, made.uuid, "subject-a");
		const res = await call("DELETE", providerPath(made.uuid), { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual(made);
		expectError(await call("GET", providerPath(made.uuid), { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", providerPath(made.uuid), { secret: admin.secret }), 404, 404102);
		expect((await call("GET", linksPath(user), { secret: admin.secret })).body).toEqual({ external_ids: {} });
		expect((await call("GET", PROVIDERS, { secret: admin.secret })).body).toEqual({ providers: {} });
		// The issuer may be configured again: a new provider, with no links.
		const again = await addProvider(admin, idp);
		expect(again.uuid).not.toBe(made.uuid);
		await link(admin.secret, user, again.uuid, "subject-a");
	});
});

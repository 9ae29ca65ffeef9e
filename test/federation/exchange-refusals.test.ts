import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, role } from "../support/accounts";
import { addProvider, EXCHANGE, exchange, federated, signIn } from "./helpers";
import { encodeSegment, IdentityProvider, makeKey, notJws, nowSeconds } from "./identity-provider";

// Each step of the exchange and the answer its refusal gets, in the documented order: the body,
// the token alone (401262), the provider and key that must accept it (401261, one answer for
// every cause), its times (401263, 401264), its subject (401265), the link (401266), the role.

type Answer = Awaited<ReturnType<typeof call>>;

const expectRefused = (what: string, res: Answer, status: number, subcode: number) => {
	expect([what, res.status, res.body?.subcode], JSON.stringify(res.body)).toEqual([what, status, subcode]);
	expectError(res, status, subcode);
};

describe("the body (400101)", () => {
	it("refuses what is not an exchange request, secret_dict included", async () => {
		const world = await federated();
		const good = { account: world.admin.account, subject_token: await world.idp.idToken({ sub: world.subject }) };
		const cases: [string, unknown][] = [
			["no account", { subject_token: good.subject_token }],
			["account not a uuid", { ...good, account: "acme" }],
			["no subject_token", { account: good.account }],
			["empty subject_token", { ...good, subject_token: "" }],
			["long subject_token", { ...good, subject_token: `${good.subject_token}${"A".repeat(8193)}` }],
			["secret_dict", { ...good, secret_dict: { site: "north" } }],
			["unknown field", { ...good, scope: "openid" }],
			["another grant_type", { ...good, grant_type: "authorization_code" }],
			["another token type", { ...good, subject_token_type: "urn:ietf:params:oauth:token-type:access_token" }],
			["validity in the past", { ...good, validity_ts: 1 }],
			["bad options", { ...good, options: ["delete"] }],
			["not an object", [good]],
		];
		for (const [what, body] of cases) expectRefused(what, await call("POST", EXCHANGE, { body }), 400, 400101);
		// A body that is not JSON is 400102, as on every route.
		expectRefused("not json", await call("POST", EXCHANGE, { body: "{account" }), 400, 400102);
		// The body is checked before the token: a forged token in a bad body is still 400101.
		expectRefused(
			"forged in a bad body",
			await exchange(world.admin.account, world.idp.unsigned({ sub: world.subject }), { unknown: 1 }),
			400,
			400101,
		);
	});
});

describe("the token alone (401262)", () => {
	it("refuses what is not a compact JWS, alg none, HS256, PS256, RS512, a crit header and no string iss", async () => {
		const world = await federated();
		const { idp, subject } = world;
		const ownToken = (await call("POST", "/token", { secret: world.admin.secret, body: {} })).body.token as string;
		const cases: [string, string][] = [
			...notJws(idp).map((text, i): [string, string] => [`not a JWS ${i}`, text]),
			["alg none", idp.unsigned({ sub: subject })],
			["alg none signed", `${idp.unsigned({ sub: subject })}c2ln`],
			["HS256 keyed with the public key", await idp.hmacWithPublicKey({ sub: subject })],
			["this service's own HS256 token", ownToken],
			["PS256", await idp.otherRsaAlg("PS256", { sub: subject })],
			["RS512", await idp.otherRsaAlg("RS512", { sub: subject })],
			["crit", await idp.withCrit({ sub: subject })],
			["no iss", await idp.idToken({ sub: subject, iss: undefined })],
			["iss not a string", await idp.idToken({ sub: subject, iss: 5 })],
			[
				"alg ES384",
				`${encodeSegment({ alg: "ES384", kid: idp.keys[0]!.kid })}.${encodeSegment(idp.claims({ sub: subject }))}.c2ln`,
			],
		];
		for (const [what, token] of cases) expectRefused(what, await exchange(world.admin.account, token), 401, 401262);
		// Judged on the token alone: the same for an account that does not exist.
		expectRefused("none, nowhere", await exchange(crypto.randomUUID(), idp.unsigned()), 401, 401262);
	});
});

describe("the provider, key and signature (401261)", () => {
	it("answers every cause alike: status, body apart from trace, headers and Server-Timing", async () => {
		const world = await federated({ algs: ["RS256", "ES256"], fields: { algorithms: ["RS256"] } });
		const { admin, idp, subject } = world;
		const rsa = idp.key("RS256");
		const stranger = await makeKey("RS256", rsa.kid);
		const elsewhere = await federated();
		const now = nowSeconds();
		const cases: [string, string, string][] = [
			["no such account", crypto.randomUUID(), await idp.idToken({ sub: subject })],
			["unknown issuer", admin.account, await idp.idToken({ sub: subject, iss: "https://unknown.example.com/" })],
			["issuer of another account's provider", admin.account, await elsewhere.idp.idToken({ sub: elsewhere.subject })],
			["wrong audience", admin.account, await idp.idToken({ sub: subject, aud: "another-client" })],
			["no audience of ours in a list", admin.account, await idp.idToken({ sub: subject, aud: ["a", "b"] })],
			["no aud", admin.account, await idp.idToken({ sub: subject, aud: undefined })],
			[
				"alg not in the provider's algorithms",
				admin.account,
				await idp.idToken({ sub: subject }, { key: idp.key("ES256") }),
			],
			["unknown kid", admin.account, await idp.idToken({ sub: subject }, { key: stranger, kid: "no-such-kid" })],
			["bad signature", admin.account, await idp.idToken({ sub: subject }, { key: stranger })],
			[
				"RS256 header over an HMAC keyed with the public key",
				admin.account,
				await idp.hmacWithPublicKey({ sub: subject }, "RS256"),
			],
			[
				"changed payload",
				admin.account,
				(await idp.idToken({ sub: subject })).replace(
					/\.[^.]+\./,
					`.${encodeSegment(idp.claims({ sub: "someone-else" }))}.`,
				),
			],
			// Refused before its times or subject are read.
			["wrong audience, expired", admin.account, await idp.idToken({ sub: subject, aud: "x", exp: now - 7200 })],
			["bad signature, unknown subject", admin.account, await idp.idToken({ sub: "nobody" }, { key: stranger })],
		];
		const answers = [];
		for (const [what, account, token] of cases) {
			const res = await exchange(account, token);
			expectRefused(what, res, 401, 401261);
			answers.push([what, fingerprint(res)]);
		}
		const [first] = answers;
		for (const [what, answer] of answers) expect([what, answer]).toEqual([what, first![1]]);
	});

	it("uses the one key for alg when the token has no kid", async () => {
		const world = await federated({ algs: ["RS256", "ES256"], fields: { algorithms: ["RS256", "ES256"] } });
		for (const key of world.idp.keys) {
			const res = await exchange(
				world.admin.account,
				await world.idp.idToken({ sub: world.subject }, { key, kid: null }),
			);
			expect([key.alg, res.status]).toEqual([key.alg, 201]);
		}
	});
});

describe("the token's times (401263, 401264)", () => {
	it("refuses an expired token or one without exp (401263), and one whose token would end by now", async () => {
		const world = await federated();
		const now = nowSeconds();
		const { idp, subject, admin } = world;
		expectRefused(
			"expired",
			await exchange(admin.account, await idp.idToken({ sub: subject, iat: now - 7200, exp: now - 120 })),
			401,
			401263,
		);
		expectRefused(
			"no exp",
			await exchange(admin.account, await idp.idToken({ sub: subject, exp: undefined })),
			401,
			401263,
		);
		// Within the 60 s skew, but with no exp_extension the token it gives would end before now.
		expectRefused(
			"ends by now",
			await exchange(admin.account, await idp.idToken({ sub: subject, iat: now - 600, exp: now - 10 })),
			401,
			401263,
		);
		// Expired and unlinked: the times come first.
		expectRefused(
			"expired, unknown subject",
			await exchange(admin.account, await idp.idToken({ sub: "nobody", exp: now - 120 })),
			401,
			401263,
		);
	});

	it("refuses nbf or iat later than now + clock_skew (401264), and takes them within it", async () => {
		const world = await federated();
		const now = nowSeconds();
		const { idp, subject, admin } = world;
		expectRefused(
			"nbf ahead",
			await exchange(admin.account, await idp.idToken({ sub: subject, nbf: now + 120 })),
			401,
			401264,
		);
		expectRefused(
			"iat ahead",
			await exchange(admin.account, await idp.idToken({ sub: subject, iat: now + 120, exp: now + 3720 })),
			401,
			401264,
		);
		expect((await exchange(admin.account, await idp.idToken({ sub: subject, nbf: now + 30 }))).status).toBe(201);
		expect((await exchange(admin.account, await idp.idToken({ sub: subject, iat: now + 30 }))).status).toBe(201);

		const strict = await federated({ fields: { clock_skew: 0 } });
		expectRefused(
			"nbf ahead, no skew",
			await exchange(strict.admin.account, await strict.idp.idToken({ sub: strict.subject, nbf: now + 10 })),
			401,
			401264,
		);
		expectRefused(
			"expired, no skew",
			await exchange(strict.admin.account, await strict.idp.idToken({ sub: strict.subject, exp: now - 1 })),
			401,
			401263,
		);
	});
});

describe("the subject (401265), the link (401266) and the role (403101)", () => {
	it("refuses a subject claim that is missing, not a string or too long, and a mapped DICT over 2 KiB", async () => {
		const world = await federated({ fields: { dict_claims: { blob: "blob" } } });
		const { idp, admin } = world;
		for (const [what, sub] of [
			["missing", undefined],
			["number", 5],
			["empty", ""],
			["long", "s".repeat(256)],
			["object", { id: 1 }],
		] as const) {
			expectRefused(what, await exchange(admin.account, await idp.idToken({ sub })), 401, 401265);
		}
		expectRefused(
			"dict too large",
			await exchange(admin.account, await idp.idToken({ sub: world.subject, blob: "x".repeat(2100) })),
			401,
			401265,
		);
		expect(
			(await exchange(admin.account, await idp.idToken({ sub: world.subject, blob: "x".repeat(1000) }))).status,
		).toBe(201);

		const byEmail = await federated({ fields: { subject_claim: "email" } });
		expectRefused(
			"no email",
			await exchange(byEmail.admin.account, await byEmail.idp.idToken({ sub: byEmail.subject })),
			401,
			401265,
		);
	});

	it("refuses a subject linked to nobody at a provider that provisions none (401266)", async () => {
		const world = await federated();
		expectRefused(
			"unlinked",
			await exchange(world.admin.account, await world.idp.idToken({ sub: "nobody-linked" })),
			401,
			401266,
		);
		// A subject linked at another provider of the account is not linked at this one.
		const other = await IdentityProvider.create();
		await addProvider(world.admin, other);
		expectRefused(
			"linked elsewhere",
			await exchange(world.admin.account, await other.idToken({ sub: world.subject })),
			401,
			401266,
		);
	});

	it("refuses a linked user whose role does not allow exchange_user_token (403101)", async () => {
		const admin = await bootstrap();
		const denied = await role(admin, { effect: "deny", actions: ["exchange_user_token"] });
		const world = await federated({ admin, role: denied });
		const res = await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }));
		expectRefused("denied", res, 403, 403101);
		// The role is read as it is now.
		const other = await federated();
		expect(
			(
				await call("PATCH", `/users/${other.user}`, {
					secret: other.admin.secret,
					body: { role: await role(other.admin, { effect: "allow", actions: ["who_am_i"] }) },
				})
			).status,
		).toBe(200);
		expectRefused(
			"narrowed",
			await exchange(other.admin.account, await other.idp.idToken({ sub: other.subject })),
			403,
			403101,
		);
	});

	it("still signs in the linked user once the refusals above are past", async () => {
		const world = await federated();
		expect((await signIn(world)).user).toBe(world.user);
	});
});

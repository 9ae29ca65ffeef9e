import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, member, role } from "../support/accounts";
import { addProvider, link, linksPath, providerPath, updateProvider } from "./helpers";
import { IdentityProvider, makeKey, nowSeconds } from "./identity-provider";

// Links: which user of the account a provider's subject is. Made by the administrator or for a
// user whose role the caller could grant; a user linking itself proves the subject with an ID
// token; never with a User Token.

// An account with a provider, and a user whose role allows everything but reads a rule: not the
// administrator, and able to grant only its own role.
async function setting() {
	const admin = await bootstrap();
	const idp = await IdentityProvider.create(["RS256"]);
	const provider = await addProvider(admin, idp);
	const ruledRole = await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.team == 'a'" }, "Team A");
	const ruled = await member(admin, ruledRole);
	return { admin, idp, provider, ruled, ruledRole };
}

describe("create_user_external_id", () => {
	it("links a user to a subject for the administrator, answers 201 and lists it", async () => {
		const { admin, provider } = await setting();
		const user = await createUser(admin);
		const res = await call("POST", linksPath(user), {
			secret: admin.secret,
			body: { provider: provider.uuid, subject: "alice@example.com" },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(res.body).toEqual({ provider: provider.uuid, subject: "alice@example.com", created_ts: expect.any(Number) });
		expect(Object.keys(res.body)).toEqual(["provider", "subject", "created_ts"]);
		const list = await call("GET", linksPath(user), { secret: admin.secret });
		expect(list.status).toBe(200);
		expect(list.body).toEqual({
			external_ids: { [provider.uuid]: { subject: "alice@example.com", created_ts: res.body.created_ts } },
		});
		// The administrator links itself with a subject, too.
		await link(admin.secret, admin.user, provider.uuid, "admin-subject");
		expect(
			(await call("GET", linksPath(admin.user), { secret: admin.secret })).body.external_ids[provider.uuid].subject,
		).toBe("admin-subject");
		// A user with no links lists none.
		expect((await call("GET", linksPath(await createUser(admin)), { secret: admin.secret })).body).toEqual({
			external_ids: {},
		});
	});

	it("refuses a bad body with 400101: unknown fields, a subject of 0 or 256 characters, no provider", async () => {
		const { admin, provider } = await setting();
		const user = await createUser(admin);
		for (const body of [
			{ provider: provider.uuid, subject: "s", extra: 1 },
			{ provider: provider.uuid, subject: "" },
			{ provider: provider.uuid, subject: "s".repeat(256) },
			{ provider: provider.uuid, subject: 5 },
			{ subject: "s" },
			{ provider: provider.uuid },
		]) {
			expectError(await call("POST", linksPath(user), { secret: admin.secret, body }), 400, 400101);
		}
		await link(admin.secret, user, provider.uuid, "s".repeat(255));
	});

	it("links another user whose role the caller could grant, and refuses one it could not (403102)", async () => {
		const { admin, provider, ruled, ruledRole } = await setting();
		const teammate = await createUser(admin, ruledRole, "teammate");
		const res = await call("POST", linksPath(teammate), {
			secret: ruled.secret,
			body: { provider: provider.uuid, subject: "teammate" },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		const wider = await createUser(admin, admin.role, "wider");
		expectError(
			await call("POST", linksPath(wider), {
				secret: ruled.secret,
				body: { provider: provider.uuid, subject: "wider" },
			}),
			403,
			403102,
		);
		expectError(
			await call("POST", linksPath(admin.user), {
				secret: ruled.secret,
				body: { provider: provider.uuid, subject: "boss" },
			}),
			403,
			403102,
		);
		expect((await call("GET", linksPath(wider), { secret: admin.secret })).body).toEqual({ external_ids: {} });
	});

	it("has a user that is not the administrator prove its own subject with an ID token", async () => {
		const { admin, idp, provider, ruled } = await setting();
		// A subject of its choosing is refused: it could take a colleague's unlinked subject.
		const chosen = await call("POST", linksPath(ruled.user), {
			secret: ruled.secret,
			body: { provider: provider.uuid, subject: "colleague" },
		});
		expect([400, 403], JSON.stringify(chosen.body)).toContain(chosen.status);
		expect([400101, 403102]).toContain(chosen.body.subcode);
		const proven = await call("POST", linksPath(ruled.user), {
			secret: ruled.secret,
			body: { provider: provider.uuid, subject_token: await idp.idToken({ sub: "me-proven" }) },
		});
		expect(proven.status, JSON.stringify(proven.body)).toBe(201);
		expect(proven.body).toEqual({ provider: provider.uuid, subject: "me-proven", created_ts: expect.any(Number) });
		expect(
			(await call("GET", linksPath(ruled.user), { secret: ruled.secret })).body.external_ids[provider.uuid].subject,
		).toBe("me-proven");
		expect((await call("GET", linksPath(ruled.user), { secret: admin.secret })).status).toBe(200);
	});

	it("answers a failing subject_token as the exchange answers it", async () => {
		const { admin, idp, provider, ruled } = await setting();
		const stranger = await makeKey("RS256", idp.keys[0]!.kid);
		const otherIdp = await IdentityProvider.create(["RS256"]);
		await addProvider(admin, otherIdp);
		const now = nowSeconds();
		const cases: [string, number, number][] = [
			[idp.unsigned(), 401, 401262],
			["not-a-token", 401, 401262],
			[await idp.idToken({ iss: undefined }), 401, 401262],
			[await idp.idToken({}, { key: stranger }), 401, 401261],
			[await idp.idToken({ aud: "someone-else" }), 401, 401261],
			// A token of another provider of the account does not prove a subject at this one.
			[await otherIdp.idToken({ sub: "other" }), 401, 401261],
			[await idp.idToken({ exp: now - 3600, iat: now - 7200 }), 401, 401263],
			[await idp.idToken({ exp: undefined }), 401, 401263],
			[await idp.idToken({ nbf: now + 3600 }), 401, 401264],
			[await idp.idToken({ sub: undefined }), 401, 401265],
			[await idp.idToken({ sub: "" }), 401, 401265],
		];
		for (const [subject_token, status, subcode] of cases) {
			const res = await call("POST", linksPath(ruled.user), {
				secret: ruled.secret,
				body: { provider: provider.uuid, subject_token },
			});
			expect([subject_token.slice(-12), res.status, res.body.subcode]).toEqual([
				subject_token.slice(-12),
				status,
				subcode,
			]);
		}
		expect((await call("GET", linksPath(ruled.user), { secret: ruled.secret })).body).toEqual({ external_ids: {} });
	});

	it("refuses a User Token with 403105, even the administrator's", async () => {
		const { admin, idp, provider, ruled } = await setting();
		for (const who of [admin, ruled]) {
			const token = (await call("POST", "/token", { secret: who.secret, body: {} })).body.token;
			const body =
				who === admin
					? { provider: provider.uuid, subject: "by-token" }
					: { provider: provider.uuid, subject_token: await idp.idToken({ sub: "by-token" }) };
			expectError(await call("POST", linksPath(who.user), { secret: token, body }), 403, 403105);
		}
	});

	it("refuses a role whose statement leaves it out (403101)", async () => {
		const { admin, provider } = await setting();
		const narrow = await member(admin, await role(admin, { effect: "deny", actions: ["create_user_external_id"] }));
		expectError(
			await call("POST", linksPath(narrow.user), {
				secret: narrow.secret,
				body: { provider: provider.uuid, subject: "x" },
			}),
			403,
			403101,
		);
	});

	it("answers another account's user or provider as absent (404102)", async () => {
		const { admin, provider } = await setting();
		const other = await setting();
		const mine = await createUser(admin);
		expectError(
			await call("POST", linksPath(other.admin.user), {
				secret: admin.secret,
				body: { provider: provider.uuid, subject: "x" },
			}),
			404,
			404102,
		);
		expectError(
			await call("POST", linksPath(mine), {
				secret: admin.secret,
				body: { provider: other.provider.uuid, subject: "x" },
			}),
			404,
			404102,
		);
		expectError(
			await call("POST", linksPath(mine), {
				secret: admin.secret,
				body: { provider: crypto.randomUUID(), subject: "x" },
			}),
			404,
			404102,
		);
		expectError(
			await call("POST", linksPath(crypto.randomUUID()), {
				secret: admin.secret,
				body: { provider: provider.uuid, subject: "x" },
			}),
			404,
			404102,
		);
		expectError(await call("GET", linksPath(other.admin.user), { secret: admin.secret }), 404, 404102);
		expectError(
			await call("DELETE", linksPath(other.admin.user, other.provider.uuid), { secret: admin.secret }),
			404,
			404102,
		);
	});

	it("refuses a subject linked to any user, and a second subject for a user at one provider (409101)", async () => {
		const { admin, provider } = await setting();
		const [a, b] = [await createUser(admin), await createUser(admin)];
		await link(admin.secret, a, provider.uuid, "shared");
		expectError(
			await call("POST", linksPath(b), { secret: admin.secret, body: { provider: provider.uuid, subject: "shared" } }),
			409,
			409101,
		);
		expectError(
			await call("POST", linksPath(a), { secret: admin.secret, body: { provider: provider.uuid, subject: "shared" } }),
			409,
			409101,
		);
		expectError(
			await call("POST", linksPath(a), { secret: admin.secret, body: { provider: provider.uuid, subject: "second" } }),
			409,
			409101,
		);
		// At another provider the same subject and user link again.
		const another = await addProvider(admin, await IdentityProvider.create());
		await link(admin.secret, a, another.uuid, "shared");
		expect(Object.keys((await call("GET", linksPath(a), { secret: admin.secret })).body.external_ids).sort()).toEqual(
			[provider.uuid, another.uuid].sort(),
		);
	});
});

describe("get_user_external_ids and delete_user_external_id", () => {
	it("follow the same user rule: itself or a user whose role the caller could grant", async () => {
		const { admin, provider, ruled, ruledRole } = await setting();
		const teammate = await createUser(admin, ruledRole);
		await link(admin.secret, teammate, provider.uuid, "teammate");
		await link(admin.secret, admin.user, provider.uuid, "admin");
		expect((await call("GET", linksPath(teammate), { secret: ruled.secret })).status).toBe(200);
		expect((await call("GET", linksPath(ruled.user), { secret: ruled.secret })).body).toEqual({ external_ids: {} });
		expectError(await call("GET", linksPath(admin.user), { secret: ruled.secret }), 403, 403102);
		expectError(await call("DELETE", linksPath(admin.user, provider.uuid), { secret: ruled.secret }), 403, 403102);
		const deleted = await call("DELETE", linksPath(teammate, provider.uuid), { secret: ruled.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body).toEqual({ provider: provider.uuid, subject: "teammate", created_ts: expect.any(Number) });
		expectError(await call("DELETE", linksPath(teammate, provider.uuid), { secret: ruled.secret }), 404, 404102);
		expectError(await call("DELETE", linksPath(teammate, crypto.randomUUID()), { secret: admin.secret }), 404, 404102);
		// The subject is free again.
		await link(admin.secret, teammate, provider.uuid, "teammate");
	});

	it("delete with a User Token: revoking widens nothing", async () => {
		const { admin, provider } = await setting();
		await link(admin.secret, admin.user, provider.uuid, "mine");
		const token = (await call("POST", "/token", { secret: admin.secret, body: {} })).body.token;
		expect((await call("GET", linksPath(admin.user), { secret: token })).status).toBe(200);
		const deleted = await call("DELETE", linksPath(admin.user, provider.uuid), { secret: token });
		expect(deleted.status).toBe(200);
		expect(deleted.body.subject).toBe("mine");
	});
});

describe("links and the users and roles they meet", () => {
	it("are deleted with their user", async () => {
		const { admin, provider } = await setting();
		const [gone, next] = [await createUser(admin), await createUser(admin)];
		await link(admin.secret, gone, provider.uuid, "moving");
		expect((await call("DELETE", `/users/${gone}`, { secret: admin.secret })).status).toBe(200);
		await link(admin.secret, next, provider.uuid, "moving");
	});

	it("keep the role a provider provisions with held: delete_user_role 409101 until no provider names it", async () => {
		const { admin, idp } = await setting();
		const provisioned = await role(
			admin,
			{ effect: "allow", actions: ["who_am_i", "exchange_user_token"] },
			{},
			"Provisioned",
		);
		const provider = await addProvider(admin, await IdentityProvider.create(), { provisioning: { role: provisioned } });
		expectError(await call("DELETE", `/roles/${provisioned}`, { secret: admin.secret }), 409, 409101);
		expect((await updateProvider(admin, provider.uuid, { provisioning: null })).status).toBe(200);
		expect((await call("DELETE", `/roles/${provisioned}`, { secret: admin.secret })).status).toBe(200);

		const again = await role(admin, { effect: "allow", actions: ["who_am_i"] }, {}, "Provisioned again");
		const second = await addProvider(admin, idp, {
			issuer: "https://second.example.com/",
			provisioning: { role: again },
		});
		expectError(await call("DELETE", `/roles/${again}`, { secret: admin.secret }), 409, 409101);
		expect((await call("DELETE", providerPath(second.uuid), { secret: admin.secret })).status).toBe(200);
		expect((await call("DELETE", `/roles/${again}`, { secret: admin.secret })).status).toBe(200);
	});
});

import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret, role } from "../support/accounts";
import { clockPast } from "../support/waiting";
import {
	claimsOf,
	federated,
	issue,
	linksPath,
	nowTs,
	providerPath,
	signIn,
	traceOf,
	updateProvider,
	whoami,
} from "./helpers";

// Federated and issued tokens die on the very next request once what binds them goes: the link,
// the provider as it was, the user; the issuer's secret, the issuer, the target and the target's
// secret as it was. Tokens made from them keep the binding and die with it.

const dead = async (token: string, subcode = 401102) => expectError(await whoami(token), 401, subcode);
const alive = async (token: string) => expect((await whoami(token)).status).toBe(200);

describe("a federated token", () => {
	const cases: [string, (world: Awaited<ReturnType<typeof federated>>) => Promise<unknown>][] = [
		["its link is deleted", (w) => call("DELETE", linksPath(w.user, w.provider.uuid), { secret: w.admin.secret })],
		["its provider is deleted", (w) => call("DELETE", providerPath(w.provider.uuid), { secret: w.admin.secret })],
		["its provider's clock_skew is changed", (w) => updateProvider(w.admin, w.provider.uuid, { clock_skew: 5 })],
		[
			"its provider's keys are replaced by the same keys",
			(w) => updateProvider(w.admin, w.provider.uuid, { jwks: w.idp.jwks() }),
		],
		[
			"its provider's token_validity is changed",
			(w) => updateProvider(w.admin, w.provider.uuid, { token_validity: 600 }),
		],
		["its user is deleted", (w) => call("DELETE", `/users/${w.user}`, { secret: w.admin.secret })],
	];
	for (const [what, revoke] of cases) {
		it(`dies (401102) when ${what}`, async () => {
			const world = await federated();
			const made = await signIn(world, { options: ["create", "refresh"] });
			const child = await call("POST", "/token", { secret: made.token, body: { options: ["create", "refresh"] } });
			expect(child.status, JSON.stringify(child.body)).toBe(201);
			const refreshed = await call("POST", "/token/refresh", { secret: made.token, body: {} });
			expect(refreshed.status, JSON.stringify(refreshed.body)).toBe(201);
			for (const token of [made.token, child.body.token, refreshed.body.token]) await alive(token);
			const res = (await revoke(world)) as { status: number };
			expect(res.status).toBe(200);
			for (const token of [made.token, child.body.token, refreshed.body.token]) await dead(token);
		});
	}

	it("reads the user's role as it is now: one without who_am_i is refused 403101", async () => {
		const world = await federated();
		const made = await signIn(world);
		const narrow = await role(world.admin, { effect: "deny", actions: ["who_am_i"] });
		expect(
			(await call("PATCH", `/users/${world.user}`, { secret: world.admin.secret, body: { role: narrow } })).status,
		).toBe(200);
		expectError(await whoami(made.token), 403, 403101);
		expect((await traceOf(made.token)).role).toBe(narrow);
	});

	it("takes no part of the user's own secret: made, replaced or deleted, the token lives", async () => {
		const world = await federated();
		const made = await signIn(world);
		await issueSecret(world.admin, world.user);
		await alive(made.token);
		await issueSecret(world.admin, world.user);
		await alive(made.token);
		expect((await call("DELETE", `/users/${world.user}/secrets`, { secret: world.admin.secret })).status).toBe(200);
		await alive(made.token);
	});

	it("keeps its binding and DICT in tokens made from it; a refresh is lowered to the exchange's validity", async () => {
		const world = await federated({ fields: { dict_claims: { site: "site" } } });
		const end = Math.round((nowTs() + 900) * 1000) / 1000;
		const made = await signIn(world, { options: ["create", "refresh"], validity_ts: end }, { site: "north" });
		expect(made.validity_ts).toBe(end);
		const child = await call("POST", "/token", { secret: made.token, body: {} });
		expect(child.status).toBe(201);
		expect(claimsOf(child.body.token)).toMatchObject({
			prv: world.provider.uuid,
			lnk: claimsOf(made.token).lnk,
			end,
			dict: { site: "north" },
		});
		expect((await traceOf(child.body.token)).credential).toMatchObject({
			fingerprint: null,
			provider: world.provider.uuid,
			subject: world.subject,
		});
		const refreshed = await call("POST", "/token/refresh", {
			secret: made.token,
			body: { validity_ts: nowTs() + 86400 },
		});
		expect(refreshed.status).toBe(201);
		expect(refreshed.body.validity_ts).toBeLessThanOrEqual(end);
		expect(claimsOf(refreshed.body.token)).toMatchObject({ end, dict: { site: "north" }, opt: ["create", "refresh"] });
		// A token made from it may not widen DICT.
		expectError(
			await call("POST", "/token", { secret: made.token, body: { secret_dict: { site: "south" } } }),
			403,
			403102,
		);
	});

	it("expires at its validity (401103)", async () => {
		const world = await federated();
		const made = await signIn(world, { validity_ts: Math.round((nowTs() + 1.2) * 1000) / 1000 });
		await alive(made.token);
		await clockPast(made.validity_ts);
		await dead(made.token, 401103);
	});
});

describe("an issued token", () => {
	// An issuer that is not the account's first user (so its secret can be replaced by the
	// administrator), and a target with a secret, and tokens issued, made from and refreshed.
	async function issued(admin: Account) {
		const issuerUser = await createUser(admin, await role(admin, { effect: "deny", actions: null }), "issuer");
		const issuerSecret = await issueSecret(admin, issuerUser);
		const target = await createUser(admin, admin.role, "target");
		await issueSecret(admin, target);
		const made = await issue(issuerSecret, target, { options: ["create", "refresh"] });
		const child = (await call("POST", "/token", { secret: made.token, body: {} })).body.token as string;
		const refreshed = (await call("POST", "/token/refresh", { secret: made.token, body: {} })).body.token as string;
		const tokens = [made.token, child, refreshed];
		for (const token of tokens) await alive(token);
		return { issuerUser, issuerSecret, target, tokens };
	}

	const cases: [string, (admin: Account, w: Awaited<ReturnType<typeof issued>>) => Promise<unknown>][] = [
		[
			"the issuer's secret is deleted",
			(admin, w) => call("DELETE", `/users/${w.issuerUser}/secrets`, { secret: admin.secret }),
		],
		["the issuer's secret is replaced by a redeemed PIN", (admin, w) => issueSecret(admin, w.issuerUser)],
		["the issuer is deleted", (admin, w) => call("DELETE", `/users/${w.issuerUser}`, { secret: admin.secret })],
		["the target is deleted", (admin, w) => call("DELETE", `/users/${w.target}`, { secret: admin.secret })],
		[
			"the target's secret is deleted",
			(admin, w) => call("DELETE", `/users/${w.target}/secrets`, { secret: admin.secret }),
		],
		["the target's secret is replaced", (admin, w) => issueSecret(admin, w.target)],
	];
	for (const [what, revoke] of cases) {
		it(`dies (401102) when ${what}, with the tokens made from it`, async () => {
			const admin = await bootstrap();
			const world = await issued(admin);
			await revoke(admin, world);
			for (const token of world.tokens) await dead(token);
		});
	}

	it("dies when the target gets a secret it had none of", async () => {
		const admin = await bootstrap();
		const target = await createUser(admin);
		const made = await issue(admin.secret, target);
		await alive(made.token);
		await issueSecret(admin, target);
		await dead(made.token);
	});

	it("keeps its actor in tokens made from it", async () => {
		const admin = await bootstrap();
		const world = await issued(admin);
		for (const token of world.tokens) {
			expect(claimsOf(token).act).toEqual({ sub: world.issuerUser });
			const trace = await traceOf(token);
			expect([trace.user, trace.credential.actor, trace.credential.fingerprint]).toEqual([
				world.target,
				world.issuerUser,
				world.issuerSecret.slice(-4),
			]);
		}
	});

	it("lives through the target's role change, read as it is now", async () => {
		const admin = await bootstrap();
		const world = await issued(admin);
		const narrow = await role(admin, { effect: "deny", actions: ["who_am_i"] });
		expect(
			(await call("PATCH", `/users/${world.target}`, { secret: admin.secret, body: { role: narrow } })).status,
		).toBe(200);
		expectError(await whoami(world.tokens[0]!), 403, 403101);
	});
});

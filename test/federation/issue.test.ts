import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret, member, role } from "../support/accounts";
import { claimsOf, issue, issuePath, nowTs, traceOf, whoami } from "./helpers";

// issue_user_token: a backend issues a User Token for a user it manages, acting as that user
// with the issuer named as its actor, never longer than either side's secret.

// A user whose role allows everything but reads a rule: it may grant only its own role.
async function ruledIssuer(admin: Account) {
	const ruledRole = await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.team == 'a'" }, "Team A");
	return { ruled: await member(admin, ruledRole), ruledRole };
}

describe("issue_user_token", () => {
	it("answers 201 a token that acts as the target, naming the issuer as its actor", async () => {
		const admin = await bootstrap();
		const target = await createUser(admin, admin.role, "target");
		const targetSecret = await issueSecret(admin, target);
		const res = await call("POST", issuePath(target), { secret: admin.secret, body: {} });
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(res.body).toEqual({
			token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
			options: [],
			validity_ts: expect.any(Number),
			user: target,
		});
		expect(Math.abs(res.body.validity_ts - (nowTs() + 86400))).toBeLessThan(60);
		expect((await whoami(res.body.token)).body).toEqual({ account: admin.account, user: target, role: admin.role });
		const claims = claimsOf(res.body.token);
		expect(claims).toMatchObject({ sub: target, acc: admin.account, act: { sub: admin.user }, opt: [] });
		expect(Object.keys(claims)).toEqual(
			expect.arrayContaining(["sub", "acc", "sec", "act", "tsec", "iat", "exp", "opt", "jti"]),
		);
		expect(JSON.stringify(claims)).not.toContain(admin.secret);
		expect(JSON.stringify(claims)).not.toContain(targetSecret);
		const trace = await traceOf(res.body.token);
		expect(trace).toMatchObject({ account: admin.account, user: target, role: admin.role });
		expect(trace.credential).toEqual({
			type: "token",
			fingerprint: admin.secret.slice(-4),
			validity_ts: res.body.validity_ts,
			options: [],
			actor: admin.user,
		});
	});

	it("takes create_user_token's body: secret_dict, options and validity_ts, refusing what it refuses", async () => {
		const admin = await bootstrap();
		const target = await createUser(admin);
		const asked = Math.round((nowTs() + 600) * 1000) / 1000;
		const made = await issue(admin.secret, target, {
			secret_dict: { site: "north" },
			options: ["create", "refresh"],
			validity_ts: asked,
		});
		expect(made.validity_ts).toBe(asked);
		expect([...made.options].sort()).toEqual(["create", "refresh"]);
		expect((await traceOf(made.token)).dict).toEqual({ site: "north" });
		for (const body of [
			{ unknown: 1 },
			{ validity_ts: 1 },
			{ options: ["delete"] },
			{ secret_dict: { "Bad-Key": 1 } },
			{ secret_dict: { big: "x".repeat(2100) } },
		]) {
			expectError(await call("POST", issuePath(target), { secret: admin.secret, body }), 400, 400101);
		}
	});

	it("issues for a target without a secret, and for the caller itself", async () => {
		const admin = await bootstrap();
		const bare = await createUser(admin);
		expect((await whoami((await issue(admin.secret, bare)).token)).body.user).toBe(bare);
		expect(claimsOf((await issue(admin.secret, bare)).token).tsec).toBeNull();
		const { ruled } = await ruledIssuer(admin);
		expect((await whoami((await issue(ruled.secret, ruled.user)).token)).body.user).toBe(ruled.user);
	});

	it("is refused by the statement (403101), with a token (403105), across accounts (404102) and for a wider role (403102)", async () => {
		const admin = await bootstrap();
		const target = await createUser(admin);
		const narrow = await member(admin, await role(admin, { effect: "deny", actions: ["issue_user_token"] }));
		expectError(await call("POST", issuePath(target), { secret: narrow.secret, body: {} }), 403, 403101);
		const token = (await call("POST", "/token", { secret: admin.secret, body: { options: ["create"] } })).body.token;
		expectError(await call("POST", issuePath(target), { secret: token, body: {} }), 403, 403105);
		const other = await bootstrap();
		expectError(await call("POST", issuePath(other.user), { secret: admin.secret, body: {} }), 404, 404102);
		expectError(await call("POST", issuePath(crypto.randomUUID()), { secret: admin.secret, body: {} }), 404, 404102);
		const { ruled, ruledRole } = await ruledIssuer(admin);
		expectError(await call("POST", issuePath(target), { secret: ruled.secret, body: {} }), 403, 403102);
		expectError(await call("POST", issuePath(admin.user), { secret: ruled.secret, body: {} }), 403, 403102);
		// A user of its own role it may issue for.
		const teammate = await createUser(admin, ruledRole);
		expect((await issue(ruled.secret, teammate)).user).toBe(teammate);
	});

	it("lives 24 h at most, no longer than the issuer's secret or the target's", async () => {
		const admin = await bootstrap();
		const issuerRole = await role(admin, { effect: "deny", actions: null });
		const issuerUser = await createUser(admin, issuerRole, "issuer");
		const issuerEnds = Math.round((nowTs() + 1200) * 1000) / 1000;
		const issuerSecret = await issueSecret(admin, issuerUser, issuerEnds);
		const target = await createUser(admin);
		expect((await issue(issuerSecret, target)).validity_ts).toBe(issuerEnds);
		const targetEnds = Math.round((nowTs() + 600) * 1000) / 1000;
		await issueSecret(admin, target, targetEnds);
		expect((await issue(issuerSecret, target)).validity_ts).toBe(targetEnds);
		expect((await issue(issuerSecret, target, { validity_ts: nowTs() + 86400 * 3 })).validity_ts).toBe(targetEnds);
		const free = await createUser(admin);
		expect(
			Math.abs((await issue(admin.secret, free, { validity_ts: null })).validity_ts - (nowTs() + 86400)),
		).toBeLessThan(60);
	});

	it("ignores Idempotency-Key: each answer is a new credential", async () => {
		const admin = await bootstrap();
		const target = await createUser(admin);
		const headers = { "idempotency-key": crypto.randomUUID() };
		const [a, b] = [
			await call("POST", issuePath(target), { secret: admin.secret, body: {}, headers }),
			await call("POST", issuePath(target), { secret: admin.secret, body: {}, headers }),
		];
		expect([a.status, b.status]).toEqual([201, 201]);
		expect(a.body.token).not.toBe(b.body.token);
	});
});

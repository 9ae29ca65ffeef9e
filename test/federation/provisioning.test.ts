import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, role } from "../support/accounts";
import { objectEnv } from "../support/objects";
import { addProvider, exchange, exchanged, linksPath, whoami } from "./helpers";
import { IdentityProvider } from "./identity-provider";

// A provider with `provisioning` makes a user for a subject nobody is linked to: of its role,
// named from the name claim, linked, once per subject however many exchanges race.

async function provisioning(
	fields: Record<string, unknown> = {},
	statement = { effect: "allow" as const, actions: ["who_am_i", "exchange_user_token"] },
) {
	const admin = await bootstrap();
	const provisioned = await role(admin, statement, {}, "Signed in");
	const idp = await IdentityProvider.create(["ES256"]);
	const provider = await addProvider(admin, idp, { provisioning: { role: provisioned }, ...fields });
	return { admin, idp, provider, provisioned };
}

async function userRecord(admin: Account, user: string) {
	const res = await call("GET", `/users/${user}`, { secret: admin.secret });
	expect(res.status).toBe(200);
	return res.body;
}

describe("provisioning", () => {
	it("makes a user of the role, named from the name claim trimmed, linked to the subject, once", async () => {
		const { admin, idp, provider, provisioned } = await provisioning();
		const token = await idp.idToken({ sub: "new-subject", name: "  Ann Example  " });
		const first = await exchanged(admin.account, token);
		expect(first).toMatchObject({ account: admin.account, provisioned: true });
		expect(first.user).not.toBe(admin.user);
		expect(await userRecord(admin, first.user)).toMatchObject({
			name: "Ann Example",
			role: provisioned,
			description: {},
		});
		expect((await whoami(first.token)).body).toEqual({ account: admin.account, user: first.user, role: provisioned });
		const links = await call("GET", linksPath(first.user), { secret: admin.secret });
		expect(links.body).toEqual({
			external_ids: { [provider.uuid]: { subject: "new-subject", created_ts: expect.any(Number) } },
		});
		// The next exchange finds the link.
		const second = await exchanged(admin.account, await idp.idToken({ sub: "new-subject", name: "Renamed" }));
		expect([second.user, second.provisioned]).toEqual([first.user, false]);
		expect((await userRecord(admin, first.user)).name).toBe("Ann Example");
		// No secret was made for it.
		expect((await call("GET", `/users/${first.user}/secrets`, { secret: admin.secret })).status).toBe(404);
	});

	it("names the user from name_claim, its first 128 characters, else the subject", async () => {
		const { admin, idp } = await provisioning();
		const cases: [Record<string, unknown>, string][] = [
			[{ sub: "long-name", name: "n".repeat(200) }, "n".repeat(128)],
			[{ sub: "no-name" }, "no-name"],
			[{ sub: "number-name", name: 42 }, "number-name"],
		];
		for (const [claims, name] of cases) {
			const made = await exchanged(admin.account, await idp.idToken(claims));
			expect([claims.sub, made.provisioned, (await userRecord(admin, made.user)).name]).toEqual([
				claims.sub,
				true,
				name,
			]);
		}
		const custom = await provisioning();
		expect(
			(
				await call("PATCH", `/account/identity-providers/${custom.provider.uuid}`, {
					secret: custom.admin.secret,
					body: { provisioning: { role: custom.provisioned, name_claim: "preferred_username" } },
				})
			).status,
		).toBe(200);
		const made = await exchanged(
			custom.admin.account,
			await custom.idp.idToken({ sub: "by-username", name: "Not this", preferred_username: "ann" }),
		);
		expect((await userRecord(custom.admin, made.user)).name).toBe("ann");
	});

	it("makes one user per subject however many exchanges race", async () => {
		const { admin, idp } = await provisioning();
		const tokens = await Promise.all(Array.from({ length: 6 }, () => idp.idToken({ sub: "racing", name: "Racer" })));
		const answers = await Promise.all(tokens.map((token) => exchange(admin.account, token)));
		expect(answers.map((res) => res.status)).toEqual(Array(6).fill(201));
		expect(new Set(answers.map((res) => res.body.user)).size).toBe(1);
		expect(answers.filter((res) => res.body.provisioned === true)).toHaveLength(1);
		const users = await call("GET", "/users", { secret: admin.secret });
		expect(Object.values(users.body.users).filter((u: any) => u.name === "Racer")).toHaveLength(1);
	});

	it("then applies the role: one without exchange_user_token is refused 403101", async () => {
		const { admin, idp } = await provisioning({}, { effect: "allow", actions: ["who_am_i"] });
		expectError(await exchange(admin.account, await idp.idToken({ sub: "not-allowed" })), 403, 403101);
	});

	it("stops past MAX_USERS with 409104", async () => {
		const { admin, idp } = await provisioning();
		await objectEnv(admin.account, { MAX_USERS: 1 });
		expectError(await exchange(admin.account, await idp.idToken({ sub: "one-too-many" })), 409, 409104);
	});

	it("is off without provisioning: 401266, and no user is made", async () => {
		const admin = await bootstrap();
		const idp = await IdentityProvider.create();
		await addProvider(admin, idp);
		expectError(await exchange(admin.account, await idp.idToken({ sub: "stranger" })), 401, 401266);
		expect(Object.keys((await call("GET", "/users", { secret: admin.secret })).body.users)).toEqual([admin.user]);
	});
});

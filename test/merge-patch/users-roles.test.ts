import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, member, role } from "../support/accounts";

const MERGE = { "content-type": "application/merge-patch+json" };
const patchUser = (secret: string, user: string, body: unknown) =>
	call("PATCH", `/users/${user}`, { secret, body, headers: MERGE });
const patchRole = (secret: string, uuid: string, body: unknown) =>
	call("PATCH", `/roles/${uuid}`, { secret, body, headers: MERGE });

describe("update_user with a merge patch", () => {
	it("merges the description (null removes a key) and keeps what the patch does not name", async () => {
		const admin = await bootstrap();
		const user = await member(admin, admin.role, { team: "ops", shift: "night", tags: ["a"] });
		const res = await patchUser(admin.secret, user.user, {
			name: "renamed",
			description: { shift: null, tags: ["b"], site: { id: 7 } },
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ name: "renamed", description: { team: "ops", tags: ["b"], site: { id: 7 } } });
		expect(Object.keys(res.body.description)).toEqual(["team", "tags", "site"]);
		expect((await call("GET", `/users/${user.user}`, { secret: admin.secret })).body.description).toEqual(
			res.body.description,
		);
	});

	it("holds the merged description to 32 KiB", async () => {
		const admin = await bootstrap();
		const user = await member(admin, admin.role, { big: "x".repeat(20_000) });
		const res = await patchUser(admin.secret, user.user, { description: { more: "y".repeat(13_000) } });
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([{ path: "description", message: expect.stringContaining("32768 bytes") }]);
		expect((await call("GET", `/users/${user.user}`, { secret: admin.secret })).body.description).toEqual({
			big: "x".repeat(20_000),
		});
	});

	it("checks the user as the merge leaves it: a patch that keeps what the caller's rule reads passes, one that changes it is 403102", async () => {
		const admin = await bootstrap();
		const actions = ["update_user", "get_user"];
		const siteRole = await role(admin, { effect: "allow", actions }, { twin: "TWIN.site == USER.site" });
		const caller = await member(admin, siteRole, { site: "north" });
		const target = await member(admin, siteRole, { site: "north", team: "a" });
		// Merged, the target's USER.site stays the caller's; sent whole, it would be lost.
		const kept = await patchUser(caller.secret, target.user, { description: { team: "b" } });
		expect(kept.status).toBe(200);
		expect(kept.body.description).toEqual({ site: "north", team: "b" });
		expectError(await patchUser(caller.secret, target.user, { description: { site: "south" } }), 403, 403102);
		expect((await call("GET", `/users/${target.user}`, { secret: admin.secret })).body.description).toEqual({
			site: "north",
			team: "b",
		});
	});

	it("keeps a user whose rules read USER. from patching its own description, and revokes PINs on a merged change", async () => {
		const admin = await bootstrap();
		const reader = await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.site == USER.site" });
		const self = await member(admin, reader, { site: "north" });
		expectError(await patchUser(self.secret, self.user, { description: { extra: 1 } }), 403, 403102);
		const pin = await call("POST", `/users/${self.user}/secrets`, { secret: admin.secret, body: {} });
		expect(pin.status).toBe(201);
		expect((await patchUser(admin.secret, self.user, { description: { extra: 1 } })).body.description).toEqual({
			site: "north",
			extra: 1,
		});
		expect((await call("POST", `/secrets/${admin.account}/${pin.body.pin}`)).status).toBe(404);
	});
});

describe("update_user_role with a merge patch", () => {
	it('merges rules by kind: null clears one, "rules": null all three', async () => {
		const admin = await bootstrap();
		const uuid = await role(
			admin,
			{ effect: "allow", actions: ["get_twin"] },
			{ twin: "TWIN.a == 1", entry: "true", identity: "true" },
		);
		const one = await patchRole(admin.secret, uuid, { rules: { entry: null, identity: "false" } });
		expect(one.status).toBe(200);
		expect(one.body.rules).toEqual({ twin: "TWIN.a == 1", entry: null, identity: "false" });
		const all = await patchRole(admin.secret, uuid, { rules: null });
		expect(all.body.rules).toEqual({ twin: null, entry: null, identity: null });
	});

	it('merges the statement by member: effect replaces, actions replace whole; "statement": null is 400101', async () => {
		const admin = await bootstrap();
		const uuid = await role(admin, { effect: "allow", actions: ["get_twin", "scan_twins"] });
		expect((await patchRole(admin.secret, uuid, { statement: { actions: ["get_user"] } })).body.statement).toEqual({
			effect: "allow",
			actions: ["get_user"],
		});
		expect((await patchRole(admin.secret, uuid, { statement: { effect: "deny" } })).body.statement).toEqual({
			effect: "deny",
			actions: ["get_user"],
		});
		const refused = await patchRole(admin.secret, uuid, { statement: null });
		expectError(refused, 400, 400101);
		expect(refused.body.details).toContainEqual({ path: "statement", message: expect.any(String) });
		expect((await call("GET", `/roles/${uuid}`, { secret: admin.secret })).body.statement).toEqual({
			effect: "deny",
			actions: ["get_user"],
		});
	});

	it("checks the role as the merge leaves it: a patch that widens it is 403102, one that keeps the caller's rule passes", async () => {
		const admin = await bootstrap();
		const actions = ["create_user_role", "update_user_role", "get_user_role", "get_twin"];
		const north = "TWIN.site == 'north'";
		const caller = await member(admin, await role(admin, { effect: "allow", actions }, { twin: north }));
		const uuid = await role(
			caller,
			{ effect: "allow", actions: ["get_twin"] },
			{ twin: `(${north}) and (TWIN.kind == 'pump')` },
		);
		// Naming one rule keeps the caller's twin rule in place; sent whole, the twin rule would be null.
		const narrowed = await patchRole(caller.secret, uuid, { rules: { identity: null } });
		expect(narrowed.status).toBe(200);
		expect(narrowed.body.rules.twin).toBe(`(${north}) and (TWIN.kind == 'pump')`);
		// A wider twin rule, an action the caller lacks beside the kept effect, or a deny that keeps
		// the listed actions: each would let the role do or see more than the caller.
		for (const body of [
			{ rules: { twin: "TWIN.site == 'south'" } },
			{ statement: { actions: ["get_twin", "terminate_twin"] } },
			{ statement: { effect: "deny" } },
		]) {
			expectError(await patchRole(caller.secret, uuid, body), 403, 403102);
		}
		const stored = await call("GET", `/roles/${uuid}`, { secret: admin.secret });
		expect(stored.body).toMatchObject({
			rules: narrowed.body.rules,
			statement: { effect: "allow", actions: ["get_twin"] },
		});
	});
});

import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWith } from "../support/accounts";

async function createRole(secret: string, body: unknown) {
	return call("POST", "/roles", { secret, body });
}

describe("create_user_role", () => {
	it("answers the Role record with unsupplied rules as null and the default statement", async () => {
		const admin = await bootstrap();
		const res = await createRole(admin.secret, { name: "Viewer" });
		expect(res.status).toBe(201);
		expect(res.body).toEqual({
			uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
			name: "Viewer",
			account: admin.account,
			rules: { twin: null, entry: null, identity: null },
			statement: { effect: "deny", actions: null },
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
		});
		expect((await call("GET", `/roles/${res.body.uuid}`, { secret: admin.secret })).body).toEqual(res.body);
	});

	it("echoes rules and statement exactly", async () => {
		const admin = await bootstrap();
		const rules = { twin: "TWIN.site == USER.site and twin_status == 'alive'", identity: "owner == account" };
		const statement = { effect: "allow", actions: ["get_user", "get_users", "get_user_role"] };
		const res = await createRole(admin.secret, { name: "Site reader", rules, statement });
		expect(res.status).toBe(201);
		expect(res.body.rules).toEqual({ ...rules, entry: null });
		expect(res.body.statement).toEqual(statement);
	});

	it.each([
		["ab", true],
		["A_b-c d9", true],
		["x".repeat(32), true],
		["a", false],
		["x".repeat(33), false],
		["_ab", false],
		["ab ", false],
		["a.b", false],
		["", false],
	])("accepts the name %j: %s", async (name, accepted) => {
		const admin = await bootstrap();
		const res = await createRole(admin.secret, { name });
		if (accepted) {
			expect(res.status).toBe(201);
		} else {
			expectError(res, 400, 400101);
			expect(res.body.details).toEqual([{ path: "name", message: expect.any(String) }]);
		}
	});

	it.each([
		["name missing", {}, "name"],
		["name not a string", { name: 12 }, "name"],
		["rules not an object", { name: "ok", rules: "x" }, "rules"],
		["an unknown rule", { name: "ok", rules: { doc: "true" } }, "rules.doc"],
		["a rule not a string", { name: "ok", rules: { twin: 1 } }, "rules.twin"],
		["statement without actions", { name: "ok", statement: { effect: "allow" } }, "statement.actions"],
		["statement without effect", { name: "ok", statement: { actions: null } }, "statement.effect"],
		["an unknown effect", { name: "ok", statement: { effect: "maybe", actions: null } }, "statement.effect"],
		["actions not a list", { name: "ok", statement: { effect: "allow", actions: "get_user" } }, "statement.actions"],
		[
			"an unknown action",
			{ name: "ok", statement: { effect: "allow", actions: ["get_user", "fly"] } },
			"statement.actions.1",
		],
		["an unknown statement field", { name: "ok", statement: { effect: "allow", actions: [], x: 1 } }, "statement.x"],
		["an unknown field", { name: "ok", colour: "red" }, "colour"],
	])("answers 400 for %s", async (_case, body, path) => {
		const admin = await bootstrap();
		const res = await createRole(admin.secret, body);
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("refuses a malformed rule, naming the position", async () => {
		const admin = await bootstrap();
		const res = await createRole(admin.secret, { name: "ok", rules: { twin: "TWIN.a == == 1" } });
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([{ path: "rules.twin", message: expect.stringMatching(/at position \d+/) }]);
		const long = await createRole(admin.secret, { name: "ok", rules: { entry: `TWIN.a == '${"x".repeat(1100)}'` } });
		expect(long.body.details).toEqual([{ path: "rules.entry", message: expect.stringContaining("1024") }]);
	});
});

describe("statements", () => {
	async function userWithRole(statement: unknown) {
		const admin = await bootstrap();
		const role = await createRole(admin.secret, { name: "Tested", statement });
		const user = await createUser(admin, role.body.uuid);
		return issueSecret(admin, user);
	}

	it("allow permits exactly the listed operations", async () => {
		const secret = await userWithRole({ effect: "allow", actions: ["who_am_i"] });
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);
		expectError(await call("GET", "/users", { secret }), 403, 403101);
		expectError(await call("GET", "/roles", { secret }), 403, 403101);
	});

	it("deny permits all but the listed operations", async () => {
		const secret = await userWithRole({ effect: "deny", actions: ["get_users"] });
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);
		expect((await call("GET", "/roles", { secret })).status).toBe(200);
		expectError(await call("GET", "/users", { secret }), 403, 403101);
	});

	it("the default statement allows everything", async () => {
		const admin = await bootstrap();
		const role = await createRole(admin.secret, { name: "Default" });
		const secret = await issueSecret(admin, await createUser(admin, role.body.uuid));
		for (const path of ["/whoami", "/users", "/roles"]) expect((await call("GET", path, { secret })).status).toBe(200);
	});

	it("allow with no actions permits nothing", async () => {
		const secret = await userWithRole({ effect: "allow", actions: null });
		expectError(await call("GET", "/whoami", { secret }), 403, 403101);
	});
});

describe("no escalation", () => {
	it("refuses a role allowing more than the caller's own", async () => {
		const admin = await bootstrap();
		const creator = await userWith(admin, { effect: "allow", actions: ["create_user_role", "who_am_i"] });
		expectError(await createRole(creator.secret, { name: "All" }), 403, 403102);
		expectError(
			await createRole(creator.secret, { name: "Some", statement: { effect: "allow", actions: ["get_users"] } }),
			403,
			403102,
		);
		const fine = await createRole(creator.secret, {
			name: "Some",
			statement: { effect: "allow", actions: ["who_am_i"] },
		});
		expect(fine.status).toBe(201);
	});

	it("refuses to widen or touch a role beyond the caller's own", async () => {
		const admin = await bootstrap();
		const editor = await userWith(admin, {
			effect: "allow",
			actions: ["update_user_role", "delete_user_role", "who_am_i"],
		});
		const narrow = (
			await createRole(admin.secret, { name: "Narrow", statement: { effect: "allow", actions: ["who_am_i"] } })
		).body;
		const widen = await call("PATCH", `/roles/${narrow.uuid}`, {
			secret: editor.secret,
			body: { statement: { effect: "deny", actions: null } },
		});
		expectError(widen, 403, 403102);
		expectError(
			await call("PATCH", `/roles/${admin.role}`, { secret: editor.secret, body: { name: "Mine" } }),
			403,
			403102,
		);
		expectError(await call("DELETE", `/roles/${admin.role}`, { secret: editor.secret }), 403, 403102);
		expect(
			(await call("PATCH", `/roles/${narrow.uuid}`, { secret: editor.secret, body: { name: "Renamed" } })).status,
		).toBe(200);
	});
});

describe("the rest of the roles API", () => {
	it("lists, updates and deletes roles", async () => {
		const admin = await bootstrap();
		const role = (await createRole(admin.secret, { name: "Temp", rules: { twin: "true" } })).body;
		const listed = await call("GET", "/roles", { secret: admin.secret });
		expect(Object.keys(listed.body.roles).sort()).toEqual([admin.role, role.uuid].sort());
		expect(listed.body.roles[role.uuid]).toEqual({
			name: "Temp",
			created_ts: role.created_ts,
			updated_ts: role.updated_ts,
		});

		const updated = await call("PATCH", `/roles/${role.uuid}`, {
			secret: admin.secret,
			body: { name: "Kept", rules: { entry: "false" }, statement: { effect: "allow", actions: ["who_am_i"] } },
		});
		expect(updated.body).toMatchObject({
			name: "Kept",
			rules: { twin: null, entry: "false", identity: null },
			statement: { effect: "allow", actions: ["who_am_i"] },
		});
		const renamed = await call("PATCH", `/roles/${role.uuid}`, { secret: admin.secret, body: { name: "Only name" } });
		expect(renamed.body.rules).toEqual(updated.body.rules);

		const deleted = await call("DELETE", `/roles/${role.uuid}`, { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body.uuid).toBe(role.uuid);
		expectError(await call("GET", `/roles/${role.uuid}`, { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", `/roles/${role.uuid}`, { secret: admin.secret }), 404, 404102);
	});

	it("refuses to delete a role a user holds (409) until nobody does", async () => {
		const admin = await bootstrap();
		const role = (await createRole(admin.secret, { name: "Held" })).body;
		const user = await createUser(admin, role.uuid);
		expectError(await call("DELETE", `/roles/${role.uuid}`, { secret: admin.secret }), 409, 409101);
		expectError(await call("DELETE", `/roles/${admin.role}`, { secret: admin.secret }), 409, 409101);
		await call("PATCH", `/users/${user}`, { secret: admin.secret, body: { role: admin.role } });
		expect((await call("DELETE", `/roles/${role.uuid}`, { secret: admin.secret })).status).toBe(200);
	});

	it("validates update bodies and answers 404 across accounts", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const bad = await call("PATCH", `/roles/${admin.role}`, {
			secret: admin.secret,
			body: { name: "!", rules: { twin: "((" } },
		});
		expectError(bad, 400, 400101);
		expect(bad.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["name", "rules.twin"]);
		for (const [method, body] of [["GET"], ["PATCH", { name: "Stolen" }], ["DELETE"]] as const) {
			expectError(await call(method, `/roles/${admin.role}`, { secret: other.secret, body }), 404, 404102);
		}
		expect(Object.keys((await call("GET", "/roles", { secret: other.secret })).body.roles)).toEqual([other.role]);
	});

	it("lands 50 concurrent create_user_role calls with 50 distinct uuids", async () => {
		const admin = await bootstrap();
		const results = await Promise.all(
			Array.from({ length: 50 }, (_, i) => createRole(admin.secret, { name: `Role ${i}` })),
		);
		expect(results.map((r) => r.status)).toEqual(Array(50).fill(201));
		const uuids = new Set(results.map((r) => r.body.uuid));
		expect(uuids.size).toBe(50);
		const listed = Object.keys((await call("GET", "/roles", { secret: admin.secret })).body.roles);
		expect(listed).toHaveLength(51);
		for (const uuid of uuids) expect(listed).toContain(uuid);
	});
});

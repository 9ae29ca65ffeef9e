import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, insertRole, userWith } from "../support/accounts";

const validUser = (role: string) => ({ name: "Ada", role, description: { team: "ops", level_2: [1, { a: null }] } });

describe("create_user", () => {
	it("creates a user in the caller's account and answers the record", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/users", { secret: admin.secret, body: validUser(admin.role) });
		expect(res.status).toBe(201);
		expect(res.body).toEqual({
			uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
			account: admin.account,
			name: "Ada",
			role: admin.role,
			description: { team: "ops", level_2: [1, { a: null }] },
			activity: null,
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
		});
		expect(Number.isInteger(Math.round(res.body.created_ts * 1000))).toBe(true);
		expect(String(res.body.created_ts)).toMatch(/^\d+(\.\d{1,3})?$/);
	});

	it.each([
		["name missing", { role: "ROLE" }, "name"],
		["name empty", { name: "  ", role: "ROLE" }, "name"],
		["name too long", { name: "n".repeat(129), role: "ROLE" }, "name"],
		["name not a string", { name: 7, role: "ROLE" }, "name"],
		["role missing", { name: "n" }, "role"],
		["role not a uuid", { name: "n", role: "admin" }, "role"],
		["description not an object", { name: "n", role: "ROLE", description: [1] }, "description"],
		["description key with a capital", { name: "n", role: "ROLE", description: { Team: 1 } }, "description.Team"],
		[
			"description key too long",
			{ name: "n", role: "ROLE", description: { ["k".repeat(65)]: 1 } },
			`description.${"k".repeat(65)}`,
		],
		["description key starting with a digit", { name: "n", role: "ROLE", description: { "1a": 1 } }, "description.1a"],
	])("answers 400 with details when %s", async (_case, body, path) => {
		const admin = await bootstrap();
		const withRole = JSON.parse(JSON.stringify(body).replace('"ROLE"', JSON.stringify(admin.role)));
		const res = await call("POST", "/users", { secret: admin.secret, body: withRole });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("accepts a description key of 64 characters", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "n", role: admin.role, description: { ["k".repeat(64)]: true } },
		});
		expect(res.status).toBe(201);
	});

	it("refuses to give a role that allows more than the caller's own", async () => {
		const admin = await bootstrap();
		const manager = await userWith(admin, { effect: "allow", actions: ["create_user", "get_users"] });
		const narrower = await insertRole(admin.account, { effect: "allow", actions: ["get_users"] });
		expectError(
			await call("POST", "/users", { secret: manager.secret, body: { name: "x", role: admin.role } }),
			403,
			403102,
		);
		const ok = await call("POST", "/users", { secret: manager.secret, body: { name: "x", role: narrower } });
		expect(ok.status).toBe(201);
	});
});

describe("get_users and get_user", () => {
	it("lists the account's users keyed by uuid", async () => {
		const admin = await bootstrap();
		const other = await createUser(admin, admin.role, "Grace");
		const res = await call("GET", "/users", { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(Object.keys(res.body.users).sort()).toEqual([admin.user, other].sort());
		expect(res.body.users[other]).toEqual({
			name: "Grace",
			role: admin.role,
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
		});
	});

	it("answers one user, 404 for an unknown one and 400 for a malformed uuid", async () => {
		const admin = await bootstrap();
		const res = await call("GET", `/users/${admin.user}`, { secret: admin.secret });
		expect(res.body).toMatchObject({ uuid: admin.user, account: admin.account, role: admin.role });
		expectError(await call("GET", `/users/${crypto.randomUUID()}`, { secret: admin.secret }), 404, 404102);
		const bad = await call("GET", "/users/not-a-uuid", { secret: admin.secret });
		expectError(bad, 400, 400101);
		expect(bad.body.details).toEqual([{ path: "user", message: expect.any(String) }]);
	});
});

describe("update_user", () => {
	it("changes name, role and description, replacing the description whole", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		await call("PATCH", `/users/${user}`, { secret: admin.secret, body: { description: { a: 1, b: 2 } } });
		const role = await insertRole(admin.account, { effect: "allow", actions: ["who_am_i"] });
		const res = await call("PATCH", `/users/${user}`, {
			secret: admin.secret,
			body: { name: "Renamed", role, description: { c: 3 } },
		});
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ name: "Renamed", role, description: { c: 3 } });
		expect(res.body.updated_ts).toBeGreaterThanOrEqual(res.body.created_ts);
	});

	it.each([
		["name", { name: "" }],
		["role", { role: "nope" }],
		["description.Bad", { description: { Bad: 1 } }],
		["extra", { extra: 1 }],
	])("answers 400 for an invalid %s", async (path, body) => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const res = await call("PATCH", `/users/${user}`, { secret: admin.secret, body });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("refuses to assign an unknown role, or a role broader than the caller's", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const unknown = await call("PATCH", `/users/${user}`, {
			secret: admin.secret,
			body: { role: crypto.randomUUID() },
		});
		expectError(unknown, 404, 404102);
		const created = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "n", role: crypto.randomUUID() },
		});
		expectError(created, 404, 404102);

		const narrow = await insertRole(admin.account, { effect: "allow", actions: ["update_user"] });
		const manager = await userWith(admin, { effect: "allow", actions: ["update_user", "get_user"] });
		const target = await createUser(admin, narrow);
		const res = await call("PATCH", `/users/${target}`, { secret: manager.secret, body: { role: admin.role } });
		expectError(res, 403, 403102);
		expectError(
			await call("PATCH", `/users/${admin.user}`, { secret: manager.secret, body: { name: "x" } }),
			403,
			403102,
		);
	});
});

describe("delete_user", () => {
	it("deletes another user and answers its record; a second delete is 404", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const res = await call("DELETE", `/users/${user}`, { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body.uuid).toBe(user);
		expectError(await call("DELETE", `/users/${user}`, { secret: admin.secret }), 404, 404102);
	});

	it("refuses to delete the calling user", async () => {
		const admin = await bootstrap();
		expectError(await call("DELETE", `/users/${admin.user}`, { secret: admin.secret }), 409, 409101);
	});
});

import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, issueSecret } from "../support/accounts";

async function createTwin(secret: string, description?: unknown) {
	const res = await call("POST", "/twins", { secret, body: description === undefined ? {} : { description } });
	expect(res.status).toBe(201);
	return res.body;
}

async function userWithTwinRule(admin: { secret: string; account: string }, twin: string, userDescription = {}) {
	const role = await call("POST", "/roles", { secret: admin.secret, body: { name: "Rule holder", rules: { twin } } });
	const user = (
		await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "r", role: role.body.uuid, description: userDescription },
		})
	).body.uuid;
	return issueSecret(admin as never, user);
}

describe("create_twin and get_twin", () => {
	it("creates an alive twin owned by the caller's account, with its creation certificate", async () => {
		const admin = await bootstrap();
		const twin = await createTwin(admin.secret, { site: "north", level_1: { x: [1, 2] } });
		expect(twin).toEqual({
			uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
			owner: admin.account,
			status: "alive",
			updated_ts: expect.any(Number),
			description: { site: "north", level_1: { x: [1, 2] } },
			creation_certificate: { uuid: twin.uuid, creator: admin.account, created_ts: twin.updated_ts },
			termination_certificate: null,
		});
		expect((await call("GET", `/twins/${twin.uuid}`, { secret: admin.secret })).body).toEqual(twin);
	});

	it.each([
		["a bad key", { description: { Bad: 1 } }, "description.Bad"],
		["a non-object description", { description: "x" }, "description"],
		["an unknown field", { owner: "me" }, "owner"],
	])("answers 400 for %s", async (_case, body, path) => {
		const admin = await bootstrap();
		const res = await call("POST", "/twins", { secret: admin.secret, body });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("hides another account's twin, unless the caller's twin rule shows it", async () => {
		const first = await bootstrap();
		const second = await bootstrap();
		const shared = await createTwin(first.secret, { shared: true });
		const secret = await createTwin(first.secret, { shared: false });
		expectError(await call("GET", `/twins/${shared.uuid}`, { secret: second.secret }), 404, 404102);

		const reader = await userWithTwinRule(second, "TWIN.shared == true");
		expect((await call("GET", `/twins/${shared.uuid}`, { secret: reader })).body.uuid).toBe(shared.uuid);
		expectError(await call("GET", `/twins/${secret.uuid}`, { secret: reader }), 404, 404102);
		expectError(await call("GET", "/twins/not-a-uuid", { secret: reader }), 400, 400101);
	});

	it("hides the account's own twins that the caller's twin rule excludes", async () => {
		const admin = await bootstrap();
		const north = await createTwin(admin.secret, { site: "north" });
		const south = await createTwin(admin.secret, { site: "south" });
		const reader = await userWithTwinRule(admin, "TWIN.site == USER.site", { site: "north" });
		expect((await call("GET", `/twins/${north.uuid}`, { secret: reader })).status).toBe(200);
		expectError(await call("GET", `/twins/${south.uuid}`, { secret: reader }), 404, 404102);
	});

	it("hides a twin whose rule needs more work than one request may do, as it hides any other", async () => {
		const admin = await bootstrap();
		// RE2 steps through a large program per character: over 30,000 characters, far too much.
		const costly = await createTwin(admin.secret, { open: true, s: "ab".repeat(15_000) });
		const cheap = await createTwin(admin.secret, { open: true, s: "ab" });
		const reader = await userWithTwinRule(admin, "TWIN.s =~ '(?:[ab][ab]?){999}[cd]' or TWIN.open == true");
		expect((await call("GET", `/twins/${cheap.uuid}`, { secret: reader })).status).toBe(200);
		expectError(await call("GET", `/twins/${costly.uuid}`, { secret: reader }), 404, 404102);
	});
});

describe("update_twin and terminate_twin", () => {
	it("replaces the description of an alive twin", async () => {
		const admin = await bootstrap();
		const twin = await createTwin(admin.secret, { a: 1 });
		const res = await call("PATCH", `/twins/${twin.uuid}`, { secret: admin.secret, body: { description: { b: 2 } } });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({ uuid: twin.uuid, description: { b: 2 }, status: "alive" });
		expect(res.body.creation_certificate).toEqual(twin.creation_certificate);
	});

	it("terminates once with a termination certificate; after that the twin is frozen", async () => {
		const admin = await bootstrap();
		const twin = await createTwin(admin.secret, { a: 1 });
		const res = await call("DELETE", `/twins/${twin.uuid}`, { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toMatchObject({
			status: "terminated",
			termination_certificate: { issuer: admin.account, terminated_ts: res.body.updated_ts },
			description: { a: 1 },
		});
		expectError(await call("DELETE", `/twins/${twin.uuid}`, { secret: admin.secret }), 400, 400103);
		expectError(
			await call("PATCH", `/twins/${twin.uuid}`, { secret: admin.secret, body: { description: {} } }),
			400,
			400103,
		);
		expect((await call("GET", `/twins/${twin.uuid}`, { secret: admin.secret })).body.status).toBe("terminated");
	});

	it("lets only the owner's account change a twin it can see", async () => {
		const owner = await bootstrap();
		const other = await bootstrap();
		const twin = await createTwin(owner.secret, { open: true });
		expectError(await call("DELETE", `/twins/${twin.uuid}`, { secret: other.secret }), 404, 404102);
		const viewer = await userWithTwinRule(other, "TWIN.open == true");
		expectError(await call("PATCH", `/twins/${twin.uuid}`, { secret: viewer, body: { description: {} } }), 403, 403103);
		expectError(await call("DELETE", `/twins/${twin.uuid}`, { secret: viewer }), 403, 403103);
		expect((await call("GET", `/twins/${twin.uuid}`, { secret: owner.secret })).body.status).toBe("alive");
	});

	it("validates the update body", async () => {
		const admin = await bootstrap();
		const twin = await createTwin(admin.secret);
		for (const [body, path] of [
			[{}, "description"],
			[{ description: { "9": 1 } }, "description.9"],
		] as const) {
			const res = await call("PATCH", `/twins/${twin.uuid}`, { secret: admin.secret, body });
			expectError(res, 400, 400101);
			expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
		}
	});

	it("terminates each twin exactly once under concurrent requests", async () => {
		const admin = await bootstrap();
		const twin = await createTwin(admin.secret);
		const results = await Promise.all(
			Array.from({ length: 10 }, () => call("DELETE", `/twins/${twin.uuid}`, { secret: admin.secret })),
		);
		expect(results.filter((r) => r.status === 200)).toHaveLength(1);
		expect(results.filter((r) => r.status === 400 && r.body.subcode === 400103)).toHaveLength(9);
	});
});

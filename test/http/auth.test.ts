import { describe, expect, it } from "vitest";
import { BASE, call, expectError, fetchWithEnv } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWith } from "../support/accounts";

describe("authentication", () => {
	it("refuses a request without a credential", async () => {
		const res = await call("GET", "/whoami");
		expectError(res, 401, 401101);
		expect(res.headers.get("www-authenticate")).toMatch(/^Bearer/);
	});

	it("refuses an unknown credential, well-formed or not", async () => {
		expectError(await call("GET", "/whoami", { secret: "A".repeat(64) }), 401, 401102);
		expectError(await call("GET", "/whoami", { secret: "not a secret" }), 401, 401102);
	});

	it("accepts the raw secret and the Bearer form", async () => {
		const admin = await bootstrap();
		expect((await call("GET", "/whoami", { secret: admin.secret })).status).toBe(200);
		expect((await call("GET", "/whoami", { secret: `Bearer ${admin.secret}` })).status).toBe(200);
	});

	it("refuses an expired secret", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user, Date.now() / 1000 + 3600);
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);

		const expire = await call("PATCH", `/users/${user}/secrets`, {
			secret: admin.secret,
			body: { validity_ts: Date.now() / 1000 - 1 },
		});
		expect(expire.status).toBe(200);
		expectError(await call("GET", "/whoami", { secret }), 401, 401103);
	});

	it("refuses a deleted secret from the very next request", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);
		expect((await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret }), 401, 401102);
	});

	it("refuses the secret of a deleted user", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		expect((await call("DELETE", `/users/${user}`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret }), 401, 401102);
	});
});

describe("the permission rule", () => {
	it("answers 403 when an allow-list leaves the operation out", async () => {
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "allow", actions: ["get_users"] });
		expect((await call("GET", "/users", { secret: reader.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret: reader.secret }), 403, 403101);
		expectError(await call("DELETE", `/users/${admin.user}/secrets`, { secret: reader.secret }), 403, 403101);
	});

	it("answers 403 when a deny-list names the operation", async () => {
		const admin = await bootstrap();
		const limited = await userWith(admin, { effect: "deny", actions: ["delete_user_secret"] });
		expect((await call("GET", "/whoami", { secret: limited.secret })).status).toBe(200);
		expectError(await call("DELETE", `/users/${limited.user}/secrets`, { secret: limited.secret }), 403, 403101);
	});

	it("checks the permission before validating input", async () => {
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "allow", actions: [] });
		expectError(await call("POST", "/users", { secret: reader.secret, body: { bogus: true } }), 403, 403101);
	});
});

describe("the bootstrap route", () => {
	const request = (token: string) =>
		new Request(`${BASE}/admin/accounts`, { method: "POST", headers: { authorization: `Bearer ${token}` } });

	it("does not exist while ADMIN_TOKEN is unset or shorter than 32 characters", async () => {
		for (const ADMIN_TOKEN of [undefined, "", "short-token"]) {
			const response = await fetchWithEnv(request(ADMIN_TOKEN ?? "x"), { ADMIN_TOKEN });
			expect(response.status).toBe(404);
			expect(await response.json()).toMatchObject({ subcode: 404101 });
		}
	});

	it("refuses a wrong or missing admin token", async () => {
		expectError(await call("POST", "/admin/accounts", { headers: { authorization: "Bearer wrong" } }), 401, 401102);
		expectError(await call("POST", "/admin/accounts"), 401, 401101);
	});

	it("does not accept a user's secret as the admin token", async () => {
		const admin = await bootstrap();
		expectError(await call("POST", "/admin/accounts", { secret: admin.secret }), 401, 401102);
	});
});

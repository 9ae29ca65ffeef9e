import { describe, expect, it, vi } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret, member, role } from "../support/accounts";

describe("get_account and update_account", () => {
	it("answers the caller's account, and changes only resource_access_log to null or {}", async () => {
		const admin = await bootstrap();
		const got = await call("GET", "/account", { secret: admin.secret });
		expect(got.status).toBe(200);
		expect(got.body).toEqual({
			uuid: admin.account,
			created_ts: expect.any(Number),
			updated_ts: got.body.created_ts,
			resource_access_log: null,
		});

		const unchanged = await call("PATCH", "/account", { secret: admin.secret, body: {} });
		expect(unchanged.body).toEqual(got.body);
		const set = await call("PATCH", "/account", { secret: admin.secret, body: { resource_access_log: {} } });
		expect(set.status).toBe(200);
		expect(set.body.resource_access_log).toEqual({});
		expect(set.body.updated_ts).toBeGreaterThanOrEqual(got.body.created_ts);
		expect((await call("GET", "/account", { secret: admin.secret })).body).toEqual(set.body);
		expect(
			(await call("PATCH", "/account", { secret: admin.secret, body: { resource_access_log: null } })).body
				.resource_access_log,
		).toBeNull();

		for (const body of [
			{ resource_access_log: { table: "logs" } },
			{ resource_access_log: "on" },
			{ description: {} },
		]) {
			expectError(await call("PATCH", "/account", { secret: admin.secret, body }), 400, 400101);
		}
	});

	it("shows each account only its own", async () => {
		const a = await bootstrap();
		const b = await bootstrap();
		expect((await call("GET", "/account", { secret: b.secret })).body.uuid).toBe(b.account);
		await call("PATCH", "/account", { secret: b.secret, body: { resource_access_log: {} } });
		expect((await call("GET", "/account", { secret: a.secret })).body.resource_access_log).toBeNull();
	});
});

describe("trace", () => {
	it("answers 201 with what the service saw of a secret's request, and logs it as one line", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const ends = Math.round((Date.now() / 1000 + 3600) * 1000) / 1000;
		const secret = await issueSecret(admin, user, ends);
		const log = vi.spyOn(console, "log").mockImplementation(() => undefined);
		const dict = { site: "north" };
		const res = await call("POST", "/trace", {
			secret,
			body: "ignored, not read",
			headers: { "x-trustedtwin": btoa(JSON.stringify(dict)) },
		});
		expect(res.status).toBe(201);
		expect(res.body).toEqual({
			trace: res.headers.get("x-request-id"),
			account: admin.account,
			user,
			role: admin.role,
			credential: { type: "secret", fingerprint: secret.slice(-4), validity_ts: ends },
			dict,
			stages: expect.any(Array),
		});
		expect(res.body.stages.map((s: { name: string }) => s.name)).toEqual([
			"authenticate",
			"statement",
			"validate",
			"handler",
		]);
		for (const stage of res.body.stages) expect(stage.ms).toBeGreaterThanOrEqual(0);
		const written = log.mock.calls.map(([line]) => String(line)).filter((line) => line.includes(res.body.trace));
		log.mockRestore();
		// Its own line, besides the request's line every request writes.
		const lines = written.filter((line) => line.startsWith('{"event":"trace"'));
		expect(written.filter((line) => line.startsWith('{"trace":'))).toHaveLength(1);
		expect(lines).toHaveLength(1);
		expect(JSON.parse(lines[0]!)).toMatchObject({ trace: res.body.trace, user, credential: { type: "secret" } });
		expect(lines[0]).not.toContain(secret);
	});

	it("names a token, its options and when it stops working: the earlier of its expiry and its secret's", async () => {
		const admin = await bootstrap();
		const made = await call("POST", "/token", { secret: admin.secret, body: { options: ["refresh"] } });
		const res = await call("POST", "/trace", { secret: made.body.token });
		expect(res.body.credential).toEqual({
			type: "token",
			fingerprint: admin.secret.slice(-4),
			validity_ts: made.body.validity_ts,
			options: ["refresh"],
		});
		expect(res.body.dict).toEqual({});
		const ending = Math.round((Date.now() / 1000 + 600) * 1000) / 1000;
		expect(
			(await call("PATCH", `/users/${admin.user}/secrets`, { secret: admin.secret, body: { validity_ts: ending } }))
				.status,
		).toBe(200);
		expect((await call("POST", "/trace", { secret: made.body.token })).body.credential.validity_ts).toBe(ending);
	});

	it("is an operation like any other: the statement decides", async () => {
		const admin = await bootstrap();
		const denied = await member(admin, await role(admin, { effect: "deny", actions: ["trace"] }));
		expectError(await call("POST", "/trace", { secret: denied.secret }), 403, 403101);
	});
});

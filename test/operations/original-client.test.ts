import { describe, expect, it } from "vitest";
import { idOf } from "../support/shards";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, createUser } from "../support/accounts";

// What the original's own client sends, beyond the interface.
describe("activity on users", () => {
	it("is null by default, accepts null or {}, is on every user record, and refuses anything else", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		expect((await call("GET", `/users/${user}`, { secret: admin.secret })).body.activity).toBeNull();
		const created = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "logged", role: admin.role, activity: {} },
		});
		expect(created.status).toBe(201);
		expect(created.body.activity).toEqual({});
		expect((await call("GET", `/users/${created.body.uuid}`, { secret: admin.secret })).body.activity).toEqual({});
		const cleared = await call("PATCH", `/users/${created.body.uuid}`, {
			secret: admin.secret,
			body: { activity: null },
		});
		expect(cleared.body.activity).toBeNull();
		expect((await call("DELETE", `/users/${created.body.uuid}`, { secret: admin.secret })).body.activity).toBeNull();
		for (const activity of [{ table: "x" }, "on", 1]) {
			expectError(await call("PATCH", `/users/${user}`, { secret: admin.secret, body: { activity } }), 400, 400101);
			expectError(
				await call("POST", "/users", { secret: admin.secret, body: { name: "x", role: admin.role, activity } }),
				400,
				400101,
			);
		}
	});
});

describe("show_terminated on get_twin", () => {
	it("answers a terminated twin as an absent one when false, and shows it by default", async () => {
		const admin = await bootstrap();
		const twin = (await call("POST", "/twins", { secret: admin.secret, body: {} })).body.uuid as string;
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.status).toBe("terminated");
		expect((await call("GET", `/twins/${twin}?show_terminated=True`, { secret: admin.secret })).status).toBe(200);
		const hidden = await call("GET", `/twins/${twin}?show_terminated=false`, { secret: admin.secret });
		const other = idOf(twin);
		const absent = await call("GET", `/twins/${other}?show_terminated=false`, { secret: admin.secret });
		expectError(hidden, 404, 404102);
		expect(fingerprint(hidden, (text) => text.replaceAll(twin, "ID"))).toEqual(
			fingerprint(absent, (text) => text.replaceAll(other, "ID")),
		);
		const alive = (await call("POST", "/twins", { secret: admin.secret, body: {} })).body.uuid as string;
		expect((await call("GET", `/twins/${alive}?show_terminated=false`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", `/twins/${twin}?show_terminated=maybe`, { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", `/twins/${twin}?other=1`, { secret: admin.secret }), 400, 400101);
	});
});

describe("a bodiless request with Content-Type: application/json", () => {
	it("passes", async () => {
		const admin = await bootstrap();
		const headers = { "content-type": "application/json" };
		expect((await call("POST", "/trace", { secret: admin.secret, headers })).status).toBe(201);
		expect((await call("POST", "/token", { secret: admin.secret, headers })).status).toBe(201);
		expect((await call("GET", "/whoami", { secret: admin.secret, headers })).status).toBe(200);
	});
});

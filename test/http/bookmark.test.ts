import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWith } from "../support/accounts";
import { scan } from "../support/twins";

// Each request runs in one D1 session begun at the primary and answers the session's newest
// bookmark; bookmarks sort oldest to newest as strings.
describe("x-d1-bookmark", () => {
	it("comes with every answer that read D1, and never goes back after a write", async () => {
		const admin = await bootstrap();
		const before = (await call("GET", "/whoami", { secret: admin.secret })).headers.get("x-d1-bookmark");
		expect(before).toEqual(expect.any(String));
		const created = await call("POST", "/twins", { secret: admin.secret, body: { description: { n: 1 } } });
		const written = created.headers.get("x-d1-bookmark") as string;
		expect(written > (before as string)).toBe(true);

		// The scan's page is read in the Durable Object, in a session continuing the request's.
		const page = await scan(admin.secret, "details=true");
		expect(page.body.twins.map((twin: { uuid: string }) => twin.uuid)).toEqual([created.body.uuid]);
		expect(page.headers.get("x-d1-bookmark")! >= written).toBe(true);
		expect(
			(await call("GET", `/twins/${created.body.uuid}`, { secret: admin.secret })).headers.get("x-d1-bookmark")! >=
				written,
		).toBe(true);
	});

	it("is not sent to a caller whose credential authenticated nobody, though it was checked at the primary", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		expect((await call("GET", "/whoami", { secret })).headers.get("x-d1-bookmark")).toEqual(expect.any(String));
		expect((await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret })).status).toBe(200);
		const deleted = await call("GET", "/whoami", { secret });
		expectError(deleted, 401, 401102);
		expect(deleted.headers.get("x-d1-bookmark")).toBeNull();
		// A made-up secret, and a made-up token in the PIN redemption's URL, learn nothing either.
		const fake = await call("GET", "/whoami", { secret: "x".repeat(64) });
		expectError(fake, 401, 401102);
		expect(fake.headers.get("x-d1-bookmark")).toBeNull();
		const pin = await call("POST", `/secrets/${admin.account}/AAAAAAAAAA`);
		expect(pin.status).toBe(404);
		expect(pin.headers.get("x-d1-bookmark")).toBeNull();
	});

	it("is sent to the administrator's token, and to a credential whose statement refuses the operation", async () => {
		const res = await call("POST", "/admin/accounts", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
		expect(res.status).toBe(201);
		expect(res.headers.get("x-d1-bookmark")).toEqual(expect.any(String));
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "allow", actions: ["whoami"] });
		const denied = await call("GET", "/users", { secret: reader.secret });
		expectError(denied, 403, 403101);
		expect(denied.headers.get("x-d1-bookmark")).toEqual(expect.any(String));
	});

	it("is not sent when no D1 query ran", async () => {
		const res = await call("GET", "/whoami");
		expectError(res, 401, 401101);
		expect(res.headers.get("x-d1-bookmark")).toBeNull();
	});
});

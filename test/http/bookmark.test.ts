import { describe, expect, it } from "vitest";
import { bootstrap, call, createUser, expectError, issueSecret, scan } from "../fixtures";

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
		expect((await call("GET", `/twins/${created.body.uuid}`, { secret: admin.secret })).headers.get("x-d1-bookmark")! >= written).toBe(true);
	});

	it("is also sent on a refused credential, which is checked at the primary", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);
		const deleted = await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret });
		expect(deleted.status).toBe(200);
		const refused = await call("GET", "/whoami", { secret });
		expectError(refused, 401, 401102);
		expect(refused.headers.get("x-d1-bookmark")! >= deleted.headers.get("x-d1-bookmark")!).toBe(true);
	});

	it("is not sent when no D1 query ran", async () => {
		const res = await call("GET", "/whoami");
		expectError(res, 401, 401101);
		expect(res.headers.get("x-d1-bookmark")).toBeNull();
	});
});

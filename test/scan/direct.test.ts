import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret } from "../support/accounts";
import { scan, seedTwins } from "../support/twins";

// A repeated scan_twins goes straight to the account's object, which reads the credential row
// in the page's D1 batch. Everything the usual path promises must hold from the next request.
async function scanner(rules: Record<string, string | null> = {}) {
	const admin = await bootstrap();
	const role = await call("POST", "/roles", { secret: admin.secret, body: { name: "scanner", rules } });
	expect(role.status).toBe(201);
	const user = await createUser(admin, role.body.uuid);
	const secret = await issueSecret(admin, user);
	await seedTwins(admin.account, [{ site: "north" }, { site: "south" }, { site: "north" }]);
	expect((await scan(secret, "details=true")).status).toBe(200);
	return { admin, role: role.body.uuid as string, user, secret };
}

describe("a repeated scan", () => {
	it("costs one D1 round trip for the credential and the page, rows read within count + 5", async () => {
		const { secret } = await scanner();
		const res = await scan(secret, "count=2&details=true");
		expect(res.body.twins).toHaveLength(2);
		expect(d1Cost(res, "queries")).toBe(2);
		expect(d1Cost(res, "rows_read")).toBeLessThanOrEqual(2 + 5);
		const next = await scan(secret, `count=2&details=true&cursor=${res.body.cursor}`);
		expect(next.body).toMatchObject({ cursor: null, twins: [expect.anything()] });
	});

	it("refuses a deleted secret on the very next request, as the usual path does", async () => {
		const { admin, user, secret } = await scanner();
		const page = await scan(secret, "count=1");
		expect((await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret })).status).toBe(200);
		const refused = await scan(secret, `count=1&cursor=${page.body.cursor}`);
		expectError(refused, 401, 401102);
		expect(refused.headers.get("www-authenticate")).toBe('Bearer realm="twin-registry"');
		expect(refused.body.description).toBe((await call("GET", "/whoami", { secret })).body.description);
	});

	it("refuses an expired secret", async () => {
		const { admin, user, secret } = await scanner();
		expect(
			(await call("PATCH", `/users/${user}/secrets`, { secret: admin.secret, body: { validity_ts: 1 } })).status,
		).toBe(200);
		expectError(await scan(secret, "count=1"), 401, 401103);
	});

	it("checks the statement first: 403 before a bad cursor or a bad parameter", async () => {
		const { admin, role, secret } = await scanner();
		const statement = { effect: "deny", actions: ["scan_twins"] };
		expect((await call("PATCH", `/roles/${role}`, { secret: admin.secret, body: { statement } })).status).toBe(200);
		expectError(await scan(secret, "count=1"), 403, 403101);
		expectError(await scan(secret, "count=1&cursor=forged"), 403, 403101);
		expectError(await scan(secret, "count=0"), 403, 403101);
	});

	it("refuses a foreign or forged cursor with 400 once the credential is checked", async () => {
		const { admin, secret } = await scanner();
		const other = await scan(admin.secret, "count=1");
		expectError(await scan(secret, `count=1&cursor=${other.body.cursor}`), 400, 400104);
		expectError(await scan(secret, "count=1&cursor=forged"), 400, 400104);
	});

	it("reads the page again when the role's rules changed since the last request", async () => {
		const { admin, role, secret } = await scanner({ twin: "TWIN.site == 'north'" });
		expect((await scan(secret, "details=true")).body.twins).toHaveLength(2);
		const rules = { twin: "TWIN.site == 'south'" };
		expect((await call("PATCH", `/roles/${role}`, { secret: admin.secret, body: { rules } })).status).toBe(200);
		const res = await scan(secret, "details=true");
		expect(res.body.twins.map((twin: { description: unknown }) => twin.description)).toEqual([{ site: "south" }]);
	});
});

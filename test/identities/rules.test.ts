import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { attach, idPath } from "./helpers";

// How the evaluator and the SQL compilation read the variable is checked without the Worker,
// in test/unit/rules/identity-variable.test.ts.
describe("the identity variable", () => {
	it("reads null in a scan's match", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const scan = async (match: string) =>
			(await call("GET", `/twins?match=${encodeURIComponent(match)}`, { secret: admin.secret })).body.twins;
		expect(await scan("identity == null")).toEqual([twin]);
		expect(await scan("identity != null")).toEqual([]);
	});
});

describe("identity rules that need more work than one request may do", () => {
	it("show nothing, in lists, lookups and resolve alike", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const long = `RFID#${"ab".repeat(60)}`;
		await attach(admin.secret, twin, { [long]: {}, "RFID#1": {} });
		// Each pattern compiles to a program of about 6,000 steps per character: three of them
		// over the 125 characters of the long identity are more than a request may do.
		const pattern = "identity =~ '(?:[ab][ab]?){999}(?:[ab][ab]?){999}[cd]'";
		const { secret } = await userWithRules(admin, { identity: `${pattern} or ${pattern} or ${pattern} or true` });
		const listed = await call("GET", `/twins/${twin}/identities`, { secret });
		expect(Object.keys(listed.body.identities)).toEqual(["RFID#1"]);
		expect((await call("GET", idPath(twin, long), { secret })).status).toBe(404);
		expect((await call("GET", `/resolve/${encodeURIComponent(long)}`, { secret })).body.twins).toEqual([]);
	});
});

import { describe, expect, it } from "vitest";
import { scanTwins } from "../../src/operations/twins";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { scan } from "../support/twins";

// A scan page is serialized where it is built and sent without a second parse by the response
// schema: these answers are checked against the schema here instead.
describe("scan_twins answers", () => {
	it("have the response schema's shape, and each detailed twin is get_twin's answer", async () => {
		const admin = await bootstrap();
		const descriptions = [
			{},
			{ name: 'Zoë ✓ "quoted"\n', nested: { list: [1, 2.5, null, true] } },
			{ site: "north", n: -0.001 },
		];
		for (const description of descriptions) {
			expect((await call("POST", "/twins", { secret: admin.secret, body: { description } })).status).toBe(201);
		}
		const [first] = (await scan(admin.secret, "")).body.twins as string[];
		expect((await call("DELETE", `/twins/${first}`, { secret: admin.secret })).status).toBe(200);

		for (const query of [
			"details=true",
			"details=false",
			"count=2&details=true",
			`details=true&match=${encodeURIComponent("TWIN.site == 'north'")}`,
		]) {
			const res = await scan(admin.secret, query);
			expect(res.status).toBe(200);
			expect(res.headers.get("content-type")).toBe("application/json");
			expect(scanTwins.response.parse(res.body)).toEqual(res.body);
		}
		const detailed = (await scan(admin.secret, "details=true")).body.twins as { uuid: string }[];
		expect(detailed).toHaveLength(3);
		for (const twin of detailed) {
			expect(twin).toEqual((await call("GET", `/twins/${twin.uuid}`, { secret: admin.secret })).body);
		}
		expect(detailed.map((twin) => (twin as unknown as { description: unknown }).description)).toEqual(
			expect.arrayContaining(descriptions),
		);
	});
});

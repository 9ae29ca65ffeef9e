import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin, scan } from "../support/twins";
import { streamPath } from "../streams/helpers";

// A query parameter comes once (docs/operations.md): given twice it is 400101 naming it, on every
// route, where the last value used to win without a word.
describe("a query parameter given twice", () => {
	it("is 400101 naming it, where the last value used to win", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const cases: [path: string, name: string][] = [
			[`/twins/${twin}/docs?view=tree&view=list`, "view"],
			[streamPath("a", "topics=b"), "topics"],
			["/twins?count=1&count=2", "count"],
			// A route whose query is otherwise ignored.
			["/whoami?x=1&x=1", "x"],
		];
		for (const [path, name] of cases) {
			const res = await call("GET", path, { secret: admin.secret });
			expectError(res, 400, 400101);
			expect(res.body.details, path).toEqual([{ path: name, message: expect.stringContaining("more than once") }]);
		}
		// Once, each is answered.
		expect((await call("GET", `/twins/${twin}/docs?view=tree`, { secret: admin.secret })).status).toBe(200);
		expect((await scan(admin.secret, "count=1")).status).toBe(200);
		expect((await call("GET", "/whoami?x=1", { secret: admin.secret })).status).toBe(200);
	});

	it("comes after the twin: a hidden twin answers 404102 as an absent one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const reader = await userWithRules(admin, { twin: "false" });
		const hidden = await call("GET", `/twins/${twin}/docs?view=tree&view=list`, { secret: reader.secret });
		const absent = await call("GET", `/twins/${crypto.randomUUID()}/docs?view=tree&view=list`, {
			secret: reader.secret,
		});
		expectError(hidden, 404, 404102);
		expectError(absent, 404, 404102);
	});
});

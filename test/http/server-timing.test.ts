import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { addEntries } from "../support/ledgers";
import { call, d1Cost } from "../support/requests";
import { newTwin } from "../support/twins";

// Server-Timing's d1 metric counts statements and the round trips to D1 they took (docs/operations.md):
// a statement run alone is one, a batch of any length one, the account's object's included.
describe("Server-Timing's d1 round trips", () => {
	it("counts one for the credential's query of /whoami", async () => {
		const admin = await bootstrap();
		const me = await call("GET", "/whoami", { secret: admin.secret });
		expect([d1Cost(me, "queries"), d1Cost(me, "calls")]).toEqual([1, 1]);
	});

	it("counts a ledger write's batch once, and nothing else once the account's object keeps what it rests on", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 }, b: { value: 1 } });
		const res = await call("PATCH", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { a: { value: 2 }, b: { value: 3 } } },
		});
		expect(res.status).toBe(200);
		const [queries, calls] = [d1Cost(res, "queries"), d1Cost(res, "calls")];
		// The admin's writes before left the object its credential, the twin and the ledger: the
		// write waits for its one batch of several statements.
		expect(calls).toBe(1);
		expect(queries).toBeGreaterThan(1);
	});
});

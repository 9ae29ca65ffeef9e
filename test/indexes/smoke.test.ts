import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries } from "../support/ledgers";
import { until } from "../support/waiting";

describe("indexes smoke", () => {
	it("keeps rows with ledger writes and builds from existing ledgers", async () => {
		const admin = await bootstrap();
		const [a, b] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await addEntries(admin.secret, a, { status: { value: { rpm: 10, state: "failure" } } });
		const definition = {
			rule: "LEDGER.status.state == 'failure'",
			properties: { names: ["rpm", "label"], types: ["integer", "text"] },
			templates: { properties: { rpm: "{LEDGER[status][rpm]}", label: "pump {twin}" } },
		};
		const created = await call("POST", "/account/services/indexes", {
			secret: admin.secret,
			body: { indexes: { failures: definition } },
		});
		expect(created.status).toBe(201);
		expect(created.body.indexes.failures.status).toBe("building");
		const ready = await until(
			() => call("GET", "/account/services/indexes/failures", { secret: admin.secret }),
			(r) => r.body.status === "ready",
			"build",
		);
		expect(ready.body.stats.rows).toBe(1);
		await addEntries(admin.secret, b, { status: { value: { rpm: "20", state: "failure" } } });
		const page = await call(
			"GET",
			`/account/services/indexes/failures/data?match=${encodeURIComponent("ROW.rpm > 15")}`,
			{ secret: admin.secret },
		);
		expect(page.status).toBe(200);
		expect(page.body.rows).toEqual([
			{ twin: b, properties: { rpm: 20, label: `pump ${b}` }, updated_ts: expect.any(Number) },
		]);
		const all = await call("GET", "/account/services/indexes/failures/data?count=1", { secret: admin.secret });
		expect(all.body.rows.length).toBe(1);
		expect(all.body.cursor).not.toBeNull();
	});
});

import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { writeLedger } from "../support/ledger-writes";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { failingBatches } from "../support/faults";
import { dbOf } from "../support/shards";

describe("a ledger write failing in D1", () => {
	it("leaves entries and history as they were", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1, history: "INF" }, b: { value: 2 } });
		const before = (await call("GET", ledger(twin), { secret: admin.secret })).body;
		const history = async () =>
			(await dbOf(twin)
				.prepare("SELECT count(*) AS n FROM ledger_history WHERE twin = ?")
				.bind(twin)
				.first("n")) as number;
		const kept = await history();

		const writer = {
			account: admin.account,
			user: admin.user,
			role: admin.role,
			description: {},
			statement: { effect: "deny" as const, actions: null },
			rules: { twin: null, entry: null, identity: null },
		};
		const twinView = { uuid: twin, owner: admin.account, status: "alive", description: {} };
		const db = database(failingBatches(dbOf(admin.account)));
		const base = { action: "update_twin_ledger_entry" as const, twin: twinView, writer, conditions: {} };
		await expect(
			writeLedger(db, { ...base, kind: "update", entries: { a: { value: 5 }, b: { value: 6 } } }, 2e9),
		).rejects.toThrow(/injected_fault/);
		await expect(
			writeLedger(db, { ...base, kind: "add", entries: { c: { value: 7, history: "1D" } } }, 2e9),
		).rejects.toThrow(/injected_fault/);
		await expect(writeLedger(db, { ...base, kind: "delete", names: null }, 2e9)).rejects.toThrow(/injected_fault/);

		expect((await call("GET", ledger(twin), { secret: admin.secret })).body).toEqual(before);
		expect(await history()).toBe(kept);
	});
});

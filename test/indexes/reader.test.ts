import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError, fingerprint } from "../support/requests";
import { bootstrap, member, role, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { createIndexes, INDEXES, indexDefinition, indexPath, indexRows, indexTable, queryIndex } from "./helpers";

// A role with a twin rule reads Indexes tables (docs/indexes.md, "Access"): the records, and of
// the rows only those whose twin it sees, the rule decided in D1 where SQL can and in the Worker
// where it cannot. A hidden row moves a page on and nothing more; the walk's cursor is the
// reader's own.

const fuel = indexDefinition("LEDGER.fuel != null", {
	fuel: ["integer", "{LEDGER[fuel]}"],
	plate: ["string", "{LEDGER[plate]}"],
});

// A fleet: vans of two drivers and one of nobody's, each with its fuel level in the account's
// ledger, and a table of them.
async function fleet() {
	const admin = await bootstrap();
	await createIndexes(admin.secret, { fuel });
	const ann = await userWithRules(admin, { twin: "TWIN.driver == user" });
	const bob = await userWithRules(admin, { twin: "TWIN.driver == user" });
	const vans: Record<string, string[]> = { ann: [], bob: [], none: [] };
	for (let i = 0; i < 12; i++) {
		const who = i % 3 === 0 ? "ann" : i % 3 === 1 ? "bob" : "none";
		const driver = who === "ann" ? ann.user : who === "bob" ? bob.user : null;
		const twin = await newTwin(admin.secret, { driver, plate: `AB-${100 + i}` });
		await addEntries(admin.secret, twin, { fuel: { value: 10 * i }, plate: { value: `AB-${100 + i}` } });
		vans[who].push(twin);
	}
	return { admin, ann, bob, vans };
}

describe("query_indexes_table by a role with a twin rule", () => {
	it("answers only the rows of twins it sees, and match runs on those alone", async () => {
		const { admin, ann, bob, vans } = await fleet();
		const of = async (secret: string, query: Record<string, string | number> = {}) =>
			(await indexRows(secret, "fuel", query)).rows.map((row) => row.twin).sort();
		expect(await of(ann.secret)).toEqual([...vans.ann].sort());
		expect(await of(bob.secret)).toEqual([...vans.bob].sort());
		expect(await of(admin.secret)).toHaveLength(12);
		// A match that would pass on every row answers Ann's vans only.
		expect(await of(ann.secret, { match: "ROW.fuel >= 0" })).toEqual([...vans.ann].sort());
		expect(await of(ann.secret, { match: "ROW.fuel > 40" })).toEqual(vans.ann.filter((_, i) => 30 * i > 40).sort());
		// The records are readable; their counts are the table's, hidden rows included.
		expect((await indexTable(ann.secret, "fuel")).stats.rows).toBe(12);
		expect(Object.keys((await call("GET", INDEXES, { secret: ann.secret })).body.indexes)).toEqual(["fuel"]);
	});

	it("decides in the Worker a rule SQL cannot, each row within its share of the budget", async () => {
		const { admin, vans } = await fleet();
		// A regular expression is left to the evaluator.
		const plates = await userWithRules(admin, { twin: "TWIN.plate =~ '^AB-1(0[0-4])$'" });
		const seen = (await indexRows(plates.secret, "fuel")).rows.map((row) => row.properties.plate).sort();
		expect(seen).toEqual(["AB-100", "AB-101", "AB-102", "AB-103", "AB-104"]);
		expect(vans.ann.length + vans.bob.length + vans.none.length).toBe(12);
	});

	it("reads at most 2 x count + 10 rows a page, whether its rows are hidden or not", async () => {
		const { admin, ann } = await fleet();
		const nobody = await userWithRules(admin, { twin: "TWIN.driver == 'nobody'" });
		for (const secret of [admin.secret, ann.secret, nobody.secret]) {
			const res = await queryIndex(secret, "fuel", { count: 5 });
			expect(res.status).toBe(200);
			expect(d1Cost(res, "rows_read")).toBeLessThanOrEqual(2 * 5 + 10);
		}
		// Hidden rows cost their twin's read, as visible ones do.
		const hidden = await queryIndex(nobody.secret, "fuel", { count: 5 });
		const shown = await queryIndex(ann.secret, "fuel", { count: 5 });
		expect(hidden.body.rows).toEqual([]);
		expect(hidden.body.cursor).toEqual(expect.any(String));
		expect(d1Cost(hidden, "rows_read")).toBe(d1Cost(shown, "rows_read"));
	});

	it("answers exactly the same page whatever a hidden row holds, decided in D1 or in the Worker, every header", async () => {
		// One table, one reader and one van it sees; a hidden van whose row and description
		// change between the queries, and the reader's rule changed between one SQL decides and
		// one it leaves to the Worker.
		const admin = await bootstrap();
		await createIndexes(admin.secret, { fuel });
		const readerRole = await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.driver == user" }, "Driver");
		const reader = await member(admin, readerRole);
		const mine = await newTwin(admin.secret, { driver: reader.user });
		const hidden = await newTwin(admin.secret, { driver: "someone else" });
		await addEntries(admin.secret, mine, { fuel: { value: 5 }, plate: { value: "MINE" } });
		await addEntries(admin.secret, hidden, { fuel: { value: 0 }, plate: { value: "" } });
		const pages = new Set<string>();
		for (const [fuelOfHidden, note] of [
			[1, "short"],
			[99_999, "x".repeat(20_000)],
		] as const) {
			expect(
				(
					await call("PATCH", `/twins/${hidden}`, {
						secret: admin.secret,
						body: { description: { driver: "someone else", note } },
					})
				).status,
			).toBe(200);
			const entries = { fuel: { value: fuelOfHidden }, plate: { value: note.slice(0, 1000) } };
			expect((await call("PATCH", ledger(hidden), { secret: admin.secret, body: { entries } })).status).toBe(200);
			for (const rule of ["TWIN.driver == user", "TWIN.driver =~ user"]) {
				const changed = await call("PATCH", `/roles/${readerRole}`, {
					secret: admin.secret,
					body: { rules: { twin: rule, entry: null, identity: null } },
				});
				expect(changed.status).toBe(200);
				const res = await queryIndex(reader.secret, "fuel", { count: 10 });
				expect(res.body.rows.map((row: { twin: string }) => row.twin)).toEqual([mine]);
				pages.add(JSON.stringify(fingerprint(res)));
			}
		}
		expect(pages.size).toBe(1);
	});

	it("walks every row it sees exactly once, through pages that may be short or empty", async () => {
		const { ann, vans } = await fleet();
		const { rows, pages } = await indexRows(ann.secret, "fuel", { count: 2 });
		expect(rows.map((row) => row.twin).sort()).toEqual([...vans.ann].sort());
		expect(new Set(rows.map((row) => row.twin)).size).toBe(rows.length);
		expect(pages.length).toBe(6 + 1);
	});

	it("holds a cursor for its reader only: another user's is 400104", async () => {
		const { ann, bob } = await fleet();
		const first = await queryIndex(ann.secret, "fuel", { count: 2 });
		expect(first.body.cursor).toEqual(expect.any(String));
		expectError(await queryIndex(bob.secret, "fuel", { count: 2, cursor: first.body.cursor }), 400, 400104);
		expect((await queryIndex(ann.secret, "fuel", { count: 2, cursor: first.body.cursor })).status).toBe(200);
	});

	it("may not define: create, update, delete and truncate stay 403102", async () => {
		const { ann } = await fleet();
		expectError(await call("POST", INDEXES, { secret: ann.secret, body: { indexes: { mine: fuel } } }), 403, 403102);
		expectError(await call("PATCH", indexPath("fuel"), { secret: ann.secret, body: { rule: "true" } }), 403, 403102);
		expectError(await call("DELETE", indexPath("fuel", "/data"), { secret: ann.secret }), 403, 403102);
		expectError(await call("DELETE", indexPath("fuel"), { secret: ann.secret }), 403, 403102);
	});
});

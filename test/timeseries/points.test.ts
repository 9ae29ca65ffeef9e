import { describe, expect, it } from "vitest";
import { bootstrap, userWithRules } from "../support/accounts";
import { call, expectError } from "../support/requests";
import { newTwin } from "../support/twins";
import { restartAccountObject } from "../support/objects";
import { logLines } from "../log/helpers";
import { dbOf } from "../support/shards";
import { createTables, definition, query, table, walk, writeValues } from "./helpers";

// The points ledger writes make (docs/timeseries.md, "Storage and consistency"): one per
// committed value change per table named, none for a refused write or a delete, each stored
// once whatever the deliveries, and a log line for each dropped one.

const FEED = { temps: { measurement: "celsius", dimensions: { site: "{twin}" } } };

async function setup() {
	const admin = await bootstrap();
	await createTables(admin.secret, { temps: definition() });
	const twin = await newTwin(admin.secret);
	return { admin, twin };
}

const everything = (secret: string) =>
	walk(secret, "temps", {
		ge: Math.floor(Date.now() / 1000) - 3600,
		le: Math.ceil(Date.now() / 1000) + 600,
		consistent: true,
	});

describe("Timeseries points", () => {
	it("stores one point per committed value change, none for a same value, a refused write or a delete", async () => {
		const { admin, twin } = await setup();
		await writeValues(admin.secret, twin, { t: 20.5 }, FEED, "POST");
		await writeValues(admin.secret, twin, { t: 21 }, FEED);
		// The same value: no change, no point.
		await writeValues(admin.secret, twin, { t: 21 }, FEED);
		const refused = await call("PATCH", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { t: { value: 99 } }, conditions: { t: "entry_value == 0" } },
		});
		expectError(refused, 409, 409102);
		const deleted = await call("DELETE", `/twins/${twin}/ledgers/personal?entries=t`, { secret: admin.secret });
		expect(deleted.status).toBe(200);
		const { rows, pages } = await everything(admin.secret);
		expect(pages[0]!.columns).toEqual(["_timestamp", "twin", "site", "celsius", "state"]);
		expect(rows.map((row) => row.slice(1))).toEqual([
			[twin, twin, 20.5, null],
			[twin, twin, 21, null],
		]);
		expect((await table(admin.secret, "temps")).stats.rows).toBe(2);
	});

	it("shows the entry's timeseries property to its account, and refuses tables it does not have", async () => {
		const { admin, twin } = await setup();
		const written = await writeValues(admin.secret, twin, { t: 1 }, FEED, "POST");
		expect(written.entries.t.timeseries).toEqual(FEED);
		const unknown = await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { u: { value: 1, timeseries: { nothing: {} } } } },
		});
		expectError(unknown, 400, 400101);
		const undeclared = await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { u: { value: 1, timeseries: { temps: { dimensions: { zone: "{twin}" } } } } } },
		});
		expectError(undeclared, 400, 400101);
		const read = await call("GET", `/twins/${twin}/ledgers/personal?entries=u`, { secret: admin.secret });
		expect(read.body.entries).toEqual({});
	});

	it("stores each point once across a delivery run again after a restart", async () => {
		const { admin, twin } = await setup();
		for (const value of [1, 2, 3])
			await writeValues(admin.secret, twin, { t: value }, FEED, value === 1 ? "POST" : "PATCH");
		// A restart forgets which points were delivered: the drain delivers them all again.
		await restartAccountObject(admin.account);
		const { rows } = await everything(admin.secret);
		expect(rows.map((row) => row[3])).toEqual([1, 2, 3]);
		const { rows: again } = await everything(admin.secret);
		expect(again).toEqual(rows);
		const left = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM timeseries_outbox WHERE account = ?")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(left?.n).toBe(0);
	});

	it("drops a point whose measurement is not declared, with a line in the account log", async () => {
		const { admin, twin } = await setup();
		await writeValues(admin.secret, twin, { pressure: 3 }, { temps: {} }, "POST");
		const { rows } = await everything(admin.secret);
		expect(rows).toEqual([]);
		const lines = await logLines(admin.secret);
		expect(
			lines.some((line) =>
				/^Timeseries point dropped: table=\[temps\], twin=\[.*\], entry=\[pressure\], reason=\[unknown measurement\]/.test(
					line,
				),
			),
		).toBe(true);
		expect((await table(admin.secret, "temps")).stats.rows).toBe(0);
	});

	it("feeds a table again once deleted and made anew under its name, never the old one", async () => {
		const { admin, twin } = await setup();
		await writeValues(admin.secret, twin, { t: 1 }, FEED, "POST");
		expect((await call("DELETE", "/account/services/timeseries/temps", { secret: admin.secret })).status).toBe(200);
		await writeValues(admin.secret, twin, { t: 2 }, FEED);
		await createTables(admin.secret, { temps: definition() });
		await writeValues(admin.secret, twin, { t: 3 }, FEED);
		const { rows } = await everything(admin.secret);
		expect(rows.map((row) => row[3])).toEqual([3]);
		const res = await query(admin.secret, "temps", { ge: 0, le: 1 });
		expect(res.status).toBe(200);
	});

	it("reads LEDGER as a confined writer sees it, so a point never tells it of hidden entries", async () => {
		const { admin, twin } = await setup();
		const at = Math.floor(Date.now() / 1000) - 30;
		await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: admin.secret,
			body: { entries: { secret: { value: at } } },
		});
		const confined = await userWithRules(admin, { entry: "entry_name != 'secret'" });
		const feed = { temps: { measurement: "celsius", timestamp: "{LEDGER[secret]}" } };
		const res = await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: confined.secret,
			body: { entries: { t: { value: 1, timeseries: feed } } },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		// The same write by a writer that sees `secret` makes a point at its time.
		await writeValues(admin.secret, twin, { t: 2 }, feed);
		const { rows } = await everything(admin.secret);
		expect(rows.map((row) => [row[0], row[3]])).toEqual([[at, 2]]);
		const reasons = (await logLines(admin.secret)).filter((line) => line.startsWith("Timeseries point dropped"));
		expect(reasons).toHaveLength(1);
		expect(reasons[0]).toMatch(/entry=\[t\], reason=\[no timestamp\]/);
	});

	it("charges template work to the write's budget, and refuses a write past it with nothing written", async () => {
		const admin = await bootstrap();
		const dims = Array.from({ length: 8 }, (_, i) => `d${i}`);
		const wide = {
			dimensions: { names: dims, types: dims.map(() => "text") },
			measurements: { names: ["v"], types: ["json"] },
			defaults: { measurement: "v", dimensions: Object.fromEntries(dims.map((d) => [d, "{entry_value}"])) },
		};
		const names = Array.from({ length: 10 }, (_, i) => `wide${i}`);
		await createTables(admin.secret, Object.fromEntries(names.map((name) => [name, wide])));
		const twin = await newTwin(admin.secret);
		const feed = Object.fromEntries(names.map((name) => [name, {}]));
		// 45 entries of 1000 characters, each into 10 tables of 8 dimensions rendering it: 3,600
		// renders of 1000 characters, past the request's 1,000,000 units.
		const entries = Object.fromEntries(
			Array.from({ length: 45 }, (_, i) => [`e${i}`, { value: "x".repeat(1000), timeseries: feed }]),
		);
		const heavy = await call("POST", `/twins/${twin}/ledgers/personal`, { secret: admin.secret, body: { entries } });
		expectError(heavy, 400, 400101);
		expect(heavy.body.details[0].path).toMatch(/^entries\.e\d+\.timeseries\.wide\d$/);
		const read = await call("GET", `/twins/${twin}/ledgers/personal`, { secret: admin.secret });
		expect(read.body.entries).toEqual({});
		// One entry into one table is well within it.
		await writeValues(admin.secret, twin, { e0: "x".repeat(1000) }, { wide0: {} }, "POST");
		const { rows } = await walk(admin.secret, "wide0", {
			ge: Math.floor(Date.now() / 1000) - 60,
			le: Math.ceil(Date.now() / 1000) + 60,
			consistent: true,
		});
		expect(rows).toHaveLength(1);
	});
});

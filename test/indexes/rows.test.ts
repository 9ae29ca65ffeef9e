import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { clockPast } from "../support/waiting";
import { failingBatches, loggedErrors } from "../support/faults";
import { objectEnv } from "../support/objects";
import { createIndexes, indexDefinition, indexPath, indexRowsByTwin, indexTable } from "./helpers";
import { dbOf, onShardOf } from "../support/shards";

// Rows (docs/indexes.md "How rows are kept", "Definitions"): each ledger write of the account
// brings its twin's row of every table to the ledger as written, in the write's own batch; the
// templates and the types make the row's values.

const bytes = (text: string) => new TextEncoder().encode(text).length;

// The table's stats as the contract defines them, from its rows as a query answers them.
async function expectExactStats(secret: string, name: string) {
	const rows = Object.values(await indexRowsByTwin(secret, name));
	const record = await indexTable(secret, name);
	expect(record.stats).toEqual({
		rows: rows.length,
		table_size: rows.reduce((sum, row) => sum + bytes(JSON.stringify(row.properties)), 0),
	});
	return record;
}

const pumps = indexDefinition("LEDGER.state == 'on'", {
	rpm: ["integer", "{LEDGER[rpm]}"],
	state: ["string", "{LEDGER[state]}"],
});

async function pumpTable() {
	const admin = await bootstrap();
	await createIndexes(admin.secret, { pumps });
	return { admin, twin: await newTwin(admin.secret) };
}

describe("a ledger write keeps its twin's row, with no waiting", () => {
	it("upserts and deletes the row on add, update, update of a value, delete of entries and delete of all", async () => {
		const { admin, twin } = await pumpTable();
		const rowOf = async () => (await indexRowsByTwin(admin.secret, "pumps"))[twin];

		await addEntries(admin.secret, twin, { state: { value: "on" }, rpm: { value: 5 } });
		const added = await rowOf();
		expect(added).toEqual({ twin, properties: { rpm: 5, state: "on" }, updated_ts: expect.any(Number) });
		expect(Object.keys(added)).toEqual(["twin", "properties", "updated_ts"]);
		expect((await indexTable(admin.secret, "pumps")).stats).toEqual({
			rows: 1,
			table_size: bytes('{"rpm":5,"state":"on"}'),
		});

		await clockPast(added.updated_ts);
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 7 } } } })).status,
		).toBe(200);
		const updated = await rowOf();
		expect(updated.properties).toEqual({ rpm: 7, state: "on" });
		expect(updated.updated_ts).toBeGreaterThan(added.updated_ts);

		expect(
			(
				await call("PATCH", ledger(twin, "personal", "/value"), {
					secret: admin.secret,
					body: { entries: { rpm: { value: 9 } } },
				})
			).status,
		).toBe(200);
		expect((await rowOf()).properties).toEqual({ rpm: 9, state: "on" });

		// The rule still holds without rpm: the row stays, its value null.
		expect((await call("DELETE", ledger(twin, "personal", "?entries=rpm"), { secret: admin.secret })).status).toBe(200);
		expect((await rowOf()).properties).toEqual({ rpm: null, state: "on" });
		await expectExactStats(admin.secret, "pumps");

		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { state: { value: "off" } } } }))
				.status,
		).toBe(200);
		expect(await rowOf()).toBeUndefined();
		expect((await indexTable(admin.secret, "pumps")).stats).toEqual({ rows: 0, table_size: 0 });

		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { state: { value: "on" } } } }))
				.status,
		).toBe(200);
		expect((await rowOf()).properties).toEqual({ rpm: null, state: "on" });

		expect((await call("DELETE", ledger(twin), { secret: admin.secret })).status).toBe(200);
		expect(await rowOf()).toBeUndefined();
		expect((await indexTable(admin.secret, "pumps")).stats).toEqual({ rows: 0, table_size: 0 });
	});

	it("leaves a row and its updated_ts as they are when the write changes none of its values", async () => {
		const { admin, twin } = await pumpTable();
		await addEntries(admin.secret, twin, { state: { value: "on" }, rpm: { value: 1 } });
		const before = (await indexRowsByTwin(admin.secret, "pumps"))[twin];
		await clockPast(before.updated_ts);
		await addEntries(admin.secret, twin, { note: { value: "unrelated" } });
		expect(
			(
				await call("PATCH", ledger(twin), {
					secret: admin.secret,
					body: { entries: { rpm: { visibility: "true", history: "1D" } } },
				})
			).status,
		).toBe(200);
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 1 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "pumps"))[twin]).toEqual(before);
	});

	it("keeps every table of the account in the one write, each by its own rule", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			hot: indexDefinition("LEDGER.t > 50", { t: ["float", "{LEDGER[t]}"] }),
			cold: indexDefinition("LEDGER.t <= 50", { t: ["float", "{LEDGER[t]}"] }),
			all: indexDefinition("true", { label: ["text", "t={LEDGER[t]}"] }),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { t: { value: 70.5 } });
		expect(Object.keys(await indexRowsByTwin(admin.secret, "hot"))).toEqual([twin]);
		expect(await indexRowsByTwin(admin.secret, "cold")).toEqual({});
		expect((await indexRowsByTwin(admin.secret, "all"))[twin].properties).toEqual({ label: "t=70.5" });
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { t: { value: 10 } } } })).status,
		).toBe(200);
		expect(await indexRowsByTwin(admin.secret, "hot")).toEqual({});
		expect((await indexRowsByTwin(admin.secret, "cold"))[twin].properties).toEqual({ t: 10 });
		expect((await indexRowsByTwin(admin.secret, "all"))[twin].properties).toEqual({ label: "t=10" });
		for (const name of ["hot", "cold", "all"]) await expectExactStats(admin.secret, name);
	});

	it("computes the row from the whole ledger when its writer sees only part of it", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			t: indexDefinition("LEDGER.secret != null", {
				secret: ["string", "{LEDGER[secret]}"],
				n: ["integer", "{LEDGER[n]}"],
			}),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { secret: { value: "kept" }, n: { value: 1 } });
		const partial = await userWithRules(admin, { entry: "entry_name != 'secret'" });
		expect(
			(await call("PATCH", ledger(twin), { secret: partial.secret, body: { entries: { n: { value: 2 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "t"))[twin].properties).toEqual({ secret: "kept", n: 2 });
		// Deleting all it sees leaves the entry it does not: the row stays, from that entry.
		const deleted = await call("DELETE", ledger(twin), { secret: partial.secret });
		expect(Object.keys(deleted.body.entries)).toEqual(["n"]);
		expect((await indexRowsByTwin(admin.secret, "t"))[twin].properties).toEqual({ secret: "kept", n: null });
		await expectExactStats(admin.secret, "t");
	});

	it("keeps rows on terminated twins too", async () => {
		const { admin, twin } = await pumpTable();
		await addEntries(admin.secret, twin, { state: { value: "on" }, rpm: { value: 1 } });
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "pumps"))[twin].properties.rpm).toBe(1);
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 2 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "pumps"))[twin].properties.rpm).toBe(2);
	});
});

describe("a refused write changes no row", () => {
	async function withRow() {
		const { admin, twin } = await pumpTable();
		await addEntries(admin.secret, twin, { state: { value: "on" }, rpm: { value: 1 } });
		const rows = await indexRowsByTwin(admin.secret, "pumps");
		const record = await indexTable(admin.secret, "pumps");
		const unchanged = async () => {
			expect(await indexRowsByTwin(admin.secret, "pumps")).toEqual(rows);
			expect(await indexTable(admin.secret, "pumps")).toEqual(record);
		};
		return { admin, twin, unchanged };
	}

	it("a false condition (409102)", async () => {
		const { admin, twin, unchanged } = await withRow();
		const conditions = { rpm: "entry_value == 100" };
		expectError(
			await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 2 } }, conditions } }),
			409,
			409102,
		);
		expectError(
			await call("PATCH", ledger(twin, "personal", "/value"), {
				secret: admin.secret,
				body: { entries: { state: { value: "off" } }, conditions },
			}),
			409,
			409102,
		);
		expectError(await call("DELETE", ledger(twin), { secret: admin.secret, body: { conditions } }), 409, 409102);
		await unchanged();
	});

	it("a ledger that would be too large (400106), an entry that exists (409101), an unknown one (404102)", async () => {
		const { admin, twin, unchanged } = await withRow();
		expectError(
			await call("PATCH", ledger(twin), {
				secret: admin.secret,
				body: { entries: { rpm: { value: 2 }, big: { value: "x".repeat(60_000) } } },
			}),
			404,
			404102,
		);
		// Large entries that change none of the row's values; then writes that would pass 64 KiB.
		await addEntries(admin.secret, twin, { big: { value: "x".repeat(40_000) }, big2: { value: "y".repeat(20_000) } });
		expectError(
			await call("POST", ledger(twin), {
				secret: admin.secret,
				body: { entries: { big3: { value: "z".repeat(30_000) } } },
			}),
			400,
			400106,
		);
		expectError(
			await call("PATCH", ledger(twin), {
				secret: admin.secret,
				body: { entries: { state: { value: "off" }, big2: { value: "y".repeat(26_000) } } },
			}),
			400,
			400106,
		);
		expectError(
			await call("PATCH", ledger(twin, "personal", "/value"), {
				secret: admin.secret,
				body: { entries: { rpm: { value: 2 }, big2: { value: "y".repeat(26_000) } } },
			}),
			400,
			400106,
		);
		expectError(
			await call("POST", ledger(twin), {
				secret: admin.secret,
				body: { entries: { state: { value: "off" }, big3: { value: 1 } } },
			}),
			409,
			409101,
		);
		expectError(
			await call("POST", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 3 } } } }),
			409,
			409101,
		);
		await unchanged();
	});

	it("a write whose D1 batch fails, after which the next write counts right", async () => {
		const { admin, twin, unchanged } = await withRow();
		const logged = loggedErrors();
		const other = await newTwin(admin.secret);
		const undo = await objectEnv(admin.account, onShardOf(admin.account, failingBatches(dbOf(admin.account))));
		const failed = await call("PATCH", ledger(twin), {
			secret: admin.secret,
			body: { entries: { rpm: { value: 2 }, state: { value: "off" } } },
		});
		expectError(failed, 500, 500101);
		expectError(
			await call("POST", ledger(other), { secret: admin.secret, body: { entries: { state: { value: "on" } } } }),
			500,
			500101,
		);
		await undo();
		expect(logged).toHaveBeenCalled();
		await unchanged();
		await addEntries(admin.secret, other, { state: { value: "on" }, rpm: { value: 4 } });
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { rpm: { value: 5 } } } })).status,
		).toBe(200);
		const rows = await indexRowsByTwin(admin.secret, "pumps");
		expect(rows[twin].properties).toEqual({ rpm: 5, state: "on" });
		expect(rows[other].properties).toEqual({ rpm: 4, state: "on" });
		await expectExactStats(admin.secret, "pumps");
	});
});

describe("which ledgers have a row", () => {
	it("none for a ledger with no entry, whatever the rule", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			always: indexDefinition("true", { twin: ["text", "{twin}"] }),
			empty: indexDefinition("LEDGER.x == null", { twin: ["text", "{twin}"] }),
		});
		const bare = await newTwin(admin.secret);
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 } });
		for (const name of ["always", "empty"])
			expect(Object.keys(await indexRowsByTwin(admin.secret, name))).toEqual([twin]);
		expect((await call("DELETE", ledger(twin), { secret: admin.secret })).status).toBe(200);
		for (const name of ["always", "empty"]) {
			expect(await indexRowsByTwin(admin.secret, name)).toEqual({});
			expect((await indexTable(admin.secret, name)).stats).toEqual({ rows: 0, table_size: 0 });
		}
		expect(bare).not.toBe(twin);
	});

	it("none when the rule is false; one as soon as it holds", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			never: indexDefinition("false", { a: ["integer", "{LEDGER[a]}"] }),
			big: indexDefinition("LEDGER.a >= 10", { a: ["integer", "{LEDGER[a]}"] }),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 } });
		expect(await indexRowsByTwin(admin.secret, "never")).toEqual({});
		expect(await indexRowsByTwin(admin.secret, "big")).toEqual({});
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { a: { value: 10 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "big"))[twin].properties).toEqual({ a: 10 });
		expect(await indexRowsByTwin(admin.secret, "never")).toEqual({});
	});

	it("none when the rule needs more than 100,000 work units on the ledger, and the write still succeeds", async () => {
		const admin = await bootstrap();
		// Each comparison of the 30,000-character string spends about 30,000 units.
		const compare = (n: number) => [...Array(n - 1).fill("LEDGER.s < 'a'"), "LEDGER.s > 'a'"].join(" or ");
		await createIndexes(admin.secret, {
			within: indexDefinition(compare(3), { n: ["integer", "{LEDGER[n]}"] }),
			past: indexDefinition(compare(4), { n: ["integer", "{LEDGER[n]}"] }),
			far: indexDefinition(compare(8), { n: ["integer", "{LEDGER[n]}"] }),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { s: { value: "b".repeat(30_000) }, n: { value: 1 } });
		expect(Object.keys(await indexRowsByTwin(admin.secret, "within"))).toEqual([twin]);
		expect(await indexRowsByTwin(admin.secret, "past")).toEqual({});
		expect(await indexRowsByTwin(admin.secret, "far")).toEqual({});
	});

	it("none when the rule and the templates together need more than 100,000 units: rendering and coercion count", async () => {
		const admin = await bootstrap();
		// The rule spends about 90,000 units (three comparisons of a 30,000-character string);
		// each property renders about 1,000 characters and coerces them: some 2,000 units more.
		const rule = Array(3)
			.fill("LEDGER.s < 'a'")
			.join(" or ")
			.replace(/< 'a'$/, "> 'a'");
		const properties = (n: number) =>
			Object.fromEntries(
				Array.from({ length: n }, (_, i) => [`p${i}`, ["string", "x{LEDGER[t]}"] as [string, string]]),
			);
		await createIndexes(admin.secret, {
			two: indexDefinition(rule, properties(2)),
			eight: indexDefinition(rule, properties(8)),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { s: { value: "b".repeat(30_000) }, t: { value: "t".repeat(1000) } });
		expect((await indexRowsByTwin(admin.secret, "two"))[twin].properties).toEqual({
			p0: `x${"t".repeat(1000)}`,
			p1: `x${"t".repeat(1000)}`,
		});
		expect(await indexRowsByTwin(admin.secret, "eight")).toEqual({});
	});

	it("keeps a row whose templates read a 60 KB entry eight times each, the texts past 1,024 characters null", async () => {
		const admin = await bootstrap();
		const eight = `x${"{LEDGER[o]}".repeat(8)}`;
		const names = Array.from({ length: 32 }, (_, i) => `p${i}`);
		const heavy = indexDefinition(
			"true",
			Object.fromEntries(names.map((name) => [name, ["string", eight] as [string, string]])),
		);
		await createIndexes(admin.secret, Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`t${i}`, heavy])));
		const twin = await newTwin(admin.secret);
		const o = Object.fromEntries(Array.from({ length: 4800 }, (_, i) => [`k${i}`, i]));
		expect(JSON.stringify(o).length).toBeGreaterThan(60_000);
		await addEntries(admin.secret, twin, { o: { value: o } });
		for (let i = 0; i < 10; i++) {
			expect((await indexRowsByTwin(admin.secret, `t${i}`))[twin].properties).toEqual(
				Object.fromEntries(names.map((name) => [name, null])),
			);
		}
	});

	it("reads the rule's ledger, account, twin and owner", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await createIndexes(admin.secret, {
			mine: indexDefinition(`ledger == account and owner == account and twin == '${twin}'`, {
				n: ["integer", "{LEDGER[n]}"],
			}),
		});
		await addEntries(admin.secret, twin, { n: { value: 1 } });
		await addEntries(admin.secret, await newTwin(admin.secret), { n: { value: 2 } });
		const rows = await indexRowsByTwin(admin.secret, "mine");
		expect(Object.keys(rows)).toEqual([twin]);
	});
});

describe("the typed values of a row", () => {
	// One table, every property the same entry as another type.
	const typed = indexDefinition("true", {
		s: ["varchar", "{LEDGER[v]}"],
		i: ["bigint", "{LEDGER[v]}"],
		f: ["double precision", "{LEDGER[v]}"],
		b: ["bool", "{LEDGER[v]}"],
		t: ["timestamptz", "{LEDGER[v]}"],
	});
	const utc = (...parts: [number, number, number, number, number, number]) =>
		Date.UTC(parts[0], parts[1] - 1, parts[2], parts[3], parts[4], parts[5]) / 1000;
	const cases: [unknown, Record<string, unknown>][] = [
		// integer
		[12, { s: "12", i: 12, f: 12, b: null, t: 12 }],
		["12", { s: "12", i: 12, f: 12, b: null, t: null }],
		["-7", { i: -7, f: -7 }],
		["x", { s: "x", i: null, f: null, b: null, t: null }],
		[1.5, { s: "1.5", i: null, f: 1.5, t: 1.5 }],
		["1.5", { i: null, f: 1.5 }],
		[" 12", { s: " 12", i: null, f: null }],
		["1e3", { i: null, f: 1000 }],
		[9007199254740991, { i: 9007199254740991 }],
		[9007199254740992, { i: null }],
		["-9007199254740992", { i: null }],
		// float
		["NaN", { f: null }],
		["01", { i: 1, f: null }],
		["-2.5e-1", { f: -0.25 }],
		// boolean
		[true, { s: "true", i: null, f: null, b: true, t: null }],
		[false, { s: "false", b: false }],
		["TRUE", { b: true }],
		["False", { b: false }],
		[1, { b: null }],
		["yes", { b: null }],
		["true ", { b: null }],
		// timestamp
		[1700000000.12345, { t: 1700000000.123 }],
		[0, { t: 0, i: 0, s: "0" }],
		[-1, { t: null, i: -1 }],
		["2024-01-02T03:04:05Z", { t: utc(2024, 1, 2, 3, 4, 5), s: "2024-01-02T03:04:05Z" }],
		["2024-01-02T03:04:05.5+01:00", { t: utc(2024, 1, 2, 2, 4, 5) + 0.5 }],
		["2024-01-02 03:04:05.1234-00:30", { t: utc(2024, 1, 2, 3, 34, 5) + 0.123 }],
		["2024-01-02T03:04:05", { t: null }],
		["2024-02-30T00:00:00Z", { t: null }],
		["2024-01-02", { t: null }],
		// string
		[{ a: 1 }, { s: null, i: null, f: null, b: null, t: null }],
		[[1], { s: null, i: null }],
		[null, { s: null, i: null, f: null, b: null, t: null }],
		["é".repeat(1024), { s: "é".repeat(1024) }],
		["a".repeat(1025), { s: null }],
	];

	it("coerces each template's value to its type, null when it does not fit, and keeps the row", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { typed });
		const twins: string[] = [];
		for (const [value] of cases) {
			const twin = await newTwin(admin.secret);
			twins.push(twin);
			await addEntries(admin.secret, twin, { v: { value } });
		}
		const rows = await indexRowsByTwin(admin.secret, "typed");
		expect(Object.keys(rows)).toHaveLength(cases.length);
		cases.forEach(([value, expected], i) => {
			const row = rows[twins[i]];
			expect(Object.keys(row.properties), JSON.stringify(value)).toEqual(["s", "i", "f", "b", "t"]);
			expect(row.properties, JSON.stringify(value)).toMatchObject(expected);
		});
		await expectExactStats(admin.secret, "typed");
	});

	it("renders templates: one field alone is its JSON value, text renders fields compact and is null when one is missing", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		await createIndexes(admin.secret, {
			tpl: indexDefinition("true", {
				whole: ["float", "{LEDGER[n]}"],
				nested: ["integer", "{LEDGER[status][rpm]}"],
				dotted: ["integer", "{LEDGER[status].rpm}"],
				listed: ["string", "{LEDGER[list][1]}"],
				keyed: ["string", "{LEDGER[obj][0]}"],
				deep: ["string", "{LEDGER[status][parts][0][name]}"],
				mixed: ["string", "rpm={LEDGER[status][rpm]} state={LEDGER[status][state]}"],
				json: ["text", "v:{LEDGER[status]}"],
				list_text: ["text", "{LEDGER[list]}!"],
				missing: ["string", "x{LEDGER[absent]}"],
				missing_key: ["string", "x{LEDGER[status][nope]}"],
				null_field: ["string", "x{LEDGER[nothing]}"],
				braces: ["string", "{{literal}} {LEDGER[n]}"],
				object_alone: ["string", "{LEDGER[status]}"],
				digits: ["integer", "{LEDGER[one]}{LEDGER[one]}"],
				flag: ["boolean", "{LEDGER[flag]}"],
				twin: ["string", "{twin}"],
				ledger: ["string", "{ledger}"],
				owner: ["string", "{owner}"],
				label: ["string", "pump {twin} of {owner} in {ledger}"],
				proto: ["string", "{LEDGER[constructor]}"],
			}),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, {
			n: { value: 2.5 },
			status: { value: { rpm: 10, state: "ok", parts: [{ name: "rotor" }] } },
			list: { value: ["a", "b", null] },
			obj: { value: { "0": "zero" } },
			nothing: { value: null },
			one: { value: 1 },
			flag: { value: "TRUE" },
		});
		const row = (await indexRowsByTwin(admin.secret, "tpl"))[twin];
		expect(row.properties).toEqual({
			whole: 2.5,
			nested: 10,
			dotted: 10,
			listed: "b",
			keyed: "zero",
			deep: "rotor",
			mixed: "rpm=10 state=ok",
			json: 'v:{"rpm":10,"state":"ok","parts":[{"name":"rotor"}]}',
			list_text: '["a","b",null]!',
			missing: null,
			missing_key: null,
			null_field: null,
			braces: "{literal} 2.5",
			object_alone: null,
			digits: 11,
			flag: true,
			twin,
			ledger: admin.account,
			owner: admin.account,
			label: `pump ${twin} of ${admin.account} in ${admin.account}`,
			proto: null,
		});
		expect(other.account).not.toBe(admin.account);
	});
});

describe("the feed: the account's own ledgers only", () => {
	// Account A's table; a user of A whose role sees every twin writes A's ledgers on B's twins.
	async function world() {
		const a = await bootstrap();
		const b = await bootstrap();
		const definition = indexDefinition("LEDGER.kind == 'pump'", {
			twin: ["string", "{twin}"],
			ledger: ["string", "{ledger}"],
			owner: ["string", "{owner}"],
			rpm: ["integer", "{LEDGER[rpm]}"],
		});
		await createIndexes(a.secret, { pumps: definition });
		await createIndexes(b.secret, { pumps: definition });
		return {
			a,
			b,
			aWriter: await userWithRules(a, { twin: "true" }),
			bWriter: await userWithRules(b, { twin: "true" }),
		};
	}

	it("shows a row on another account's twin with that twin's uuid and the account's own values", async () => {
		const { a, b, aWriter } = await world();
		const theirs = await newTwin(b.secret);
		await addEntries(aWriter.secret, theirs, { kind: { value: "pump" }, rpm: { value: 3 } });
		const row = (await indexRowsByTwin(a.secret, "pumps"))[theirs];
		expect(row.properties).toEqual({ twin: theirs, ledger: a.account, owner: b.account, rpm: 3 });
		// Alive or terminated.
		expect((await call("DELETE", `/twins/${theirs}`, { secret: b.secret })).status).toBe(200);
		expect(
			(await call("PATCH", ledger(theirs), { secret: aWriter.secret, body: { entries: { rpm: { value: 4 } } } }))
				.status,
		).toBe(200);
		expect((await indexRowsByTwin(a.secret, "pumps"))[theirs].properties.rpm).toBe(4);
		// B's table knows nothing of A's ledger on B's own twin.
		expect(await indexRowsByTwin(b.secret, "pumps")).toEqual({});
	});

	it("never takes another account's entries, public or not", async () => {
		const { a, b, aWriter, bWriter } = await world();
		const ours = await newTwin(a.secret);
		const shared = await newTwin(a.secret);
		const theirs = await newTwin(b.secret);
		await addEntries(a.secret, shared, { kind: { value: "pump" }, rpm: { value: 1 } });
		const before = (await indexRowsByTwin(a.secret, "pumps"))[shared];

		// B's public entries on A's twins, on its own twin, and on a twin where A has a row.
		const public_ = (rpm: number) => ({
			kind: { value: "pump", visibility: "true" },
			rpm: { value: rpm, visibility: "true" },
		});
		await addEntries(bWriter.secret, ours, public_(50));
		await addEntries(bWriter.secret, shared, public_(60));
		await addEntries(b.secret, theirs, public_(70));
		expect(await indexRowsByTwin(a.secret, "pumps")).toEqual({ [shared]: before });
		expect((await indexTable(a.secret, "pumps")).stats.rows).toBe(1);

		// B's own table has B's values only.
		const bRows = await indexRowsByTwin(b.secret, "pumps");
		expect(Object.fromEntries(Object.entries(bRows).map(([twin, row]) => [twin, row.properties.rpm]))).toEqual({
			[ours]: 50,
			[shared]: 60,
			[theirs]: 70,
		});
		expect(bRows[ours].properties).toMatchObject({ ledger: b.account, owner: a.account });

		// A's write on a twin that also holds B's ledger reads A's entries only.
		await addEntries(aWriter.secret, theirs, { kind: { value: "pump" } });
		expect((await indexRowsByTwin(a.secret, "pumps"))[theirs].properties).toEqual({
			twin: theirs,
			ledger: a.account,
			owner: b.account,
			rpm: null,
		});
	});
});

describe("stats", () => {
	it("counts the rows and the bytes of their properties as compact JSON, exactly", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			names: indexDefinition("LEDGER.name != null", {
				name: ["text", "{LEDGER[name]}"],
				n: ["integer", "{LEDGER[n]}"],
			}),
		});
		const twins = [await newTwin(admin.secret), await newTwin(admin.secret), await newTwin(admin.secret)];
		await addEntries(admin.secret, twins[0], { name: { value: "é" }, n: { value: 1 } });
		await addEntries(admin.secret, twins[1], { name: { value: '日本 "quoted" \\ \n' } });
		await addEntries(admin.secret, twins[2], { n: { value: 3 } });
		const record = await expectExactStats(admin.secret, "names");
		expect(record.stats).toEqual({
			rows: 2,
			table_size: bytes('{"name":"é","n":1}') + bytes(JSON.stringify({ name: '日本 "quoted" \\ \n', n: null })),
		});
		expect(
			(await call("PATCH", ledger(twins[0]), { secret: admin.secret, body: { entries: { name: { value: "ééé" } } } }))
				.status,
		).toBe(200);
		await addEntries(admin.secret, twins[2], { name: { value: "x" } });
		expect((await expectExactStats(admin.secret, "names")).stats.rows).toBe(3);
		expect((await call("DELETE", ledger(twins[1]), { secret: admin.secret })).status).toBe(200);
		expect((await expectExactStats(admin.secret, "names")).stats).toEqual({
			rows: 2,
			table_size: bytes('{"name":"ééé","n":1}') + bytes('{"name":"x","n":3}'),
		});
	});
});

describe("MAX_INDEX_ROWS", () => {
	async function fullTable(admin: Account) {
		await objectEnv(admin.account, { MAX_INDEX_ROWS: "2" });
		await createIndexes(admin.secret, { t: indexDefinition("true", { v: ["integer", "{LEDGER[v]}"] }) });
		const twins = [await newTwin(admin.secret), await newTwin(admin.secret), await newTwin(admin.secret)];
		await addEntries(admin.secret, twins[0], { v: { value: 1 } });
		await addEntries(admin.secret, twins[1], { v: { value: 2 } });
		expect((await indexTable(admin.secret, "t")).status).toBe("ready");
		return twins;
	}

	it("is `full` at the limit: a row that would be added is not, existing rows still change, the ledger write succeeds", async () => {
		const admin = await bootstrap();
		const twins = await fullTable(admin);
		await addEntries(admin.secret, twins[2], { v: { value: 3 } });
		const record = await expectExactStats(admin.secret, "t");
		expect(record.status).toBe("full");
		expect(record.stats.rows).toBe(2);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t")).sort()).toEqual([twins[0], twins[1]].sort());
		expect(
			(await call("PATCH", ledger(twins[0]), { secret: admin.secret, body: { entries: { v: { value: 10 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "t"))[twins[0]].properties).toEqual({ v: 10 });
		expect(
			(await call("PATCH", ledger(twins[2]), { secret: admin.secret, body: { entries: { v: { value: 30 } } } })).status,
		).toBe(200);
		expect((await indexRowsByTwin(admin.secret, "t"))[twins[2]]).toBeUndefined();
		expect((await expectExactStats(admin.secret, "t")).status).toBe("full");
	});

	it("is `ready` again after a truncate, rows coming back as their ledgers change", async () => {
		const admin = await bootstrap();
		const twins = await fullTable(admin);
		await addEntries(admin.secret, twins[2], { v: { value: 3 } });
		expect((await indexTable(admin.secret, "t")).status).toBe("full");
		const truncated = await call("DELETE", indexPath("t", "/data"), { secret: admin.secret });
		expect(truncated.status).toBe(200);
		expect(truncated.body).toMatchObject({ stats: { rows: 0, table_size: 0 }, status: "ready" });
		expect(
			(await call("PATCH", ledger(twins[2]), { secret: admin.secret, body: { entries: { v: { value: 30 } } } })).status,
		).toBe(200);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t"))).toEqual([twins[2]]);
		expect((await expectExactStats(admin.secret, "t")).status).toBe("ready");
	});
});

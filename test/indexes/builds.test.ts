import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BUILD_BYTES, BUILD_LEDGERS, BUILD_WORK_UNITS, buildStep, IndexCatalog } from "../../src/account/index-tables";
import { database } from "../../src/db/client";
import { call } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin, seedTwins } from "../support/twins";
import { addEntries, ledger, seedLedgers } from "../support/ledgers";
import { until } from "../support/waiting";
import { objectEnv } from "../support/objects";
import {
	createIndexes,
	indexBuilt,
	indexDefinition,
	indexPath,
	indexRowsByTwin,
	indexTable,
	indexTableRow,
	indexWorkLeft,
	oldIndexRows,
	queryIndex,
} from "./helpers";
import { dbOf } from "../support/shards";

// Builds (docs/indexes.md "Changing, truncating, deleting"): a new generation is filled by the
// account's alarm from its ledgers, in bounded steps queued between writes; old rows go in the
// background. Nothing here is awaited but the answers; the rest is polled.

const bytes = (text: string) => new TextEncoder().encode(text).length;

const byN = indexDefinition("LEDGER.n != null and LEDGER.n >= 0", {
	n: ["integer", "{LEDGER[n]}"],
	tag: ["string", "{LEDGER[tag]}"],
});

// The table's rows as twin → properties.
async function propertiesOf(secret: string, name: string) {
	const rows = await indexRowsByTwin(secret, name);
	return Object.fromEntries(Object.entries(rows).map(([twin, row]) => [twin, row.properties]));
}

async function expectExactStats(secret: string, name: string) {
	const rows = Object.values(await indexRowsByTwin(secret, name));
	const record = await indexTable(secret, name);
	expect(record.stats).toEqual({
		rows: rows.length,
		table_size: rows.reduce((sum, row) => sum + bytes(JSON.stringify(row.properties)), 0),
	});
	return record;
}

// `count` twins of the account, written straight into D1, each with a ledger of `entries(i)`.
async function seededLedgers(account: string, count: number, entries: (i: number) => Record<string, unknown>) {
	const twins = (
		await seedTwins(
			account,
			Array.from({ length: count }, () => ({})),
		)
	).sort();
	await seedLedgers(
		account,
		twins.map((twin, i) => ({ twin, entries: entries(i) })),
	);
	return twins;
}

describe("a new table over existing ledgers", () => {
	it("answers `building`, then `ready` with a row for every ledger that passes", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const writer = await userWithRules(admin, { twin: "true" });
		const twins = [
			await newTwin(admin.secret),
			await newTwin(admin.secret),
			await newTwin(admin.secret),
			await newTwin(admin.secret),
		];
		const theirs = await newTwin(other.secret);
		await addEntries(admin.secret, twins[0], { n: { value: 1 }, tag: { value: "a" } });
		await addEntries(admin.secret, twins[1], { n: { value: -1 }, tag: { value: "fails" } });
		await addEntries(admin.secret, twins[2], { tag: { value: "no n" } });
		await addEntries(admin.secret, twins[3], { n: { value: 3 } });
		expect((await call("DELETE", ledger(twins[3]), { secret: admin.secret })).status).toBe(200);
		await addEntries(writer.secret, theirs, { n: { value: 7 }, tag: { value: "on theirs" } });
		// The other account's own public entries, on its twin and on ours, never feed the table.
		await addEntries(other.secret, theirs, { n: { value: 100, visibility: "true" } });

		const made = await createIndexes(admin.secret, { t: byN });
		expect(made.t.status).toBe("building");
		expect(made.t.stats).toEqual({ rows: 0, table_size: 0 });
		const ready = await indexBuilt(admin.secret, "t");
		expect(ready.status).toBe("ready");
		expect(await propertiesOf(admin.secret, "t")).toEqual({
			[twins[0]]: { n: 1, tag: "a" },
			[theirs]: { n: 7, tag: "on theirs" },
		});
		await expectExactStats(admin.secret, "t");
		expect(ready.updated_ts).toBe(made.t.updated_ts);
	});

	it("answers `ready` at once for an account without ledgers, also one whose entries were all deleted", async () => {
		const admin = await bootstrap();
		expect((await createIndexes(admin.secret, { a: byN })).a.status).toBe("ready");
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { n: { value: 1 } });
		expect((await call("DELETE", ledger(twin), { secret: admin.secret })).status).toBe(200);
		expect((await createIndexes(admin.secret, { b: byN })).b.status).toBe("ready");
		// A ledger on another account's twin is a ledger of this account.
		const other = await bootstrap();
		const writer = await userWithRules(admin, { twin: "true" });
		await addEntries(writer.secret, await newTwin(other.secret), { n: { value: 2 } });
		expect((await createIndexes(admin.secret, { c: byN })).c.status).toBe("building");
		expect(Object.values(await propertiesOf(admin.secret, "c")).length).toBeLessThanOrEqual(1);
		await indexBuilt(admin.secret, "c");
		expect(Object.values(await propertiesOf(admin.secret, "c"))).toEqual([{ n: 2, tag: null }]);
	});

	it("backfills a few hundred ledgers, big ones among them, to exactly the expected rows", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		// 420 ledgers of ours: every fifth fails the rule, every seventh has no n; 80 of about
		// 60 KB, so that a step stops at 2 MiB before 200 ledgers.
		const entries = (i: number): Record<string, unknown> => ({
			...(i % 7 === 3 ? {} : { n: i % 5 === 0 ? -i - 1 : i }),
			tag: `t${i}`,
			...(i % 5 === 2 ? { pad: "x".repeat(60_000) } : {}),
		});
		const twins = await seededLedgers(admin.account, 420, entries);
		// The other account's ledgers on the same twins, and ours on 30 of its twins.
		await seedLedgers(
			other.account,
			twins.map((twin) => ({ twin, entries: { n: 1_000, tag: "theirs" } })),
		);
		const theirs = (
			await seedTwins(
				other.account,
				Array.from({ length: 30 }, () => ({})),
			)
		).sort();
		await seedLedgers(
			admin.account,
			theirs.map((twin, i) => ({ twin, entries: { n: 5_000 + i, tag: "ours on theirs" } })),
		);

		const made = await createIndexes(admin.secret, {
			t: indexDefinition("LEDGER.n >= 0", {
				n: ["integer", "{LEDGER[n]}"],
				tag: ["string", "{LEDGER[tag]}"],
				owner: ["string", "{owner}"],
			}),
		});
		expect(made.t.status).toBe("building");
		const ready = await indexBuilt(admin.secret, "t", 60_000);
		expect(ready.status).toBe("ready");

		const expected: Record<string, unknown> = {};
		twins.forEach((twin, i) => {
			const e = entries(i);
			if (typeof e.n === "number" && e.n >= 0) expected[twin] = { n: e.n, tag: `t${i}`, owner: admin.account };
		});
		theirs.forEach((twin, i) => {
			expected[twin] = { n: 5_000 + i, tag: "ours on theirs", owner: other.account };
		});
		const rows = await propertiesOf(admin.secret, "t");
		expect(Object.keys(rows).length).toBe(Object.keys(expected).length);
		expect(rows).toEqual(expected);
		await expectExactStats(admin.secret, "t");
	}, 90_000);

	it("keeps the writes made during the build: no row lost, each current when its write answers", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 3000, (i) => ({ n: i, tag: "seeded" }));
		const made = await createIndexes(admin.secret, { t: byN });
		expect(made.t.status).toBe("building");

		const fresh = await newTwin(admin.secret);
		const rowNow = async (twin: string) =>
			(await queryIndex(admin.secret, "t", { match: `twin == '${twin}'` })).body.rows[0]?.properties;
		// Near the end of the walk, at its start, a new twin, and ledgers that stop passing.
		expect(
			(
				await call("PATCH", ledger(twins[2990]), {
					secret: admin.secret,
					body: { entries: { tag: { value: "late" } } },
				})
			).status,
		).toBe(200);
		expect(await rowNow(twins[2990])).toEqual({ n: 2990, tag: "late" });
		const during = (await indexTable(admin.secret, "t")).status;
		expect(
			(await call("PATCH", ledger(twins[0]), { secret: admin.secret, body: { entries: { tag: { value: "early" } } } }))
				.status,
		).toBe(200);
		await addEntries(admin.secret, fresh, { n: { value: 1_000_000 }, tag: { value: "fresh" } });
		expect(await rowNow(fresh)).toEqual({ n: 1_000_000, tag: "fresh" });
		expect(
			(await call("PATCH", ledger(twins[2500]), { secret: admin.secret, body: { entries: { n: { value: -1 } } } }))
				.status,
		).toBe(200);
		expect(await rowNow(twins[2500])).toBeUndefined();
		expect((await call("DELETE", ledger(twins[1500]), { secret: admin.secret })).status).toBe(200);
		expect(await rowNow(twins[1500])).toBeUndefined();
		// The writes above should have met the build; if the machine built 3000 ledgers faster
		// than one write, this test checks nothing about it.
		expect(during).toBe("building");

		const ready = await indexBuilt(admin.secret, "t", 60_000);
		expect(ready.status).toBe("ready");
		const expected: Record<string, unknown> = {};
		twins.forEach((twin, i) => {
			if (i !== 2500 && i !== 1500) expected[twin] = { n: i, tag: i === 0 ? "early" : i === 2990 ? "late" : "seeded" };
		});
		expected[fresh] = { n: 1_000_000, tag: "fresh" };
		expect(await propertiesOf(admin.secret, "t")).toEqual(expected);
		await expectExactStats(admin.secret, "t");
	}, 90_000);

	it("builds every table a create makes, one after another, each to its own rows", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 450, (i) => ({ n: i, tag: i % 2 ? "odd" : "even" }));
		const made = await createIndexes(admin.secret, {
			odd: indexDefinition("LEDGER.tag == 'odd'", { n: ["integer", "{LEDGER[n]}"] }),
			even: indexDefinition("LEDGER.tag == 'even'", { n: ["integer", "{LEDGER[n]}"] }),
			all: indexDefinition("true", { label: ["text", "{LEDGER[tag]}-{LEDGER[n]}"] }),
		});
		expect(Object.values(made).map((record) => record.status)).toEqual(["building", "building", "building"]);
		for (const name of ["odd", "even", "all"])
			expect((await indexBuilt(admin.secret, name, 60_000)).status).toBe("ready");
		expect(Object.keys(await propertiesOf(admin.secret, "odd")).sort()).toEqual(twins.filter((_, i) => i % 2));
		expect(Object.keys(await propertiesOf(admin.secret, "even")).sort()).toEqual(twins.filter((_, i) => i % 2 === 0));
		const all = await propertiesOf(admin.secret, "all");
		expect(Object.keys(all)).toHaveLength(450);
		expect(all[twins[7]]).toEqual({ label: "odd-7" });
		for (const name of ["odd", "even", "all"]) await expectExactStats(admin.secret, name);
	}, 90_000);

	it("stops at MAX_INDEX_ROWS, `full`, until a truncate or a rebuild", async () => {
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_INDEX_ROWS: "5" });
		await seededLedgers(admin.account, 8, (i) => ({ n: i }));
		expect((await createIndexes(admin.secret, { t: byN })).t.status).toBe("building");
		const built = await indexBuilt(admin.secret, "t");
		expect(built.status).toBe("full");
		expect(built.stats.rows).toBe(5);
		await expectExactStats(admin.secret, "t");

		const truncated = await call("DELETE", indexPath("t", "/data"), { secret: admin.secret });
		expect(truncated.body).toMatchObject({ stats: { rows: 0, table_size: 0 }, status: "ready" });

		const rebuilt = await call("PATCH", indexPath("t"), { secret: admin.secret, body: { rule: "LEDGER.n >= 2" } });
		expect(rebuilt.body.status).toBe("building");
		const again = await indexBuilt(admin.secret, "t");
		expect(again.status).toBe("full");
		expect(Object.values(await propertiesOf(admin.secret, "t")).every((p) => (p.n as number) >= 2)).toBe(true);
		expect((await expectExactStats(admin.secret, "t")).stats.rows).toBe(5);
	});
});

describe("update_indexes_table rebuilds", () => {
	it("on a new rule: the old rows are invisible at once, the new ones come with the build, the old deleted in the background", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 40, (i) => ({ n: i, tag: `t${i}` }));
		await createIndexes(admin.secret, { t: indexDefinition("LEDGER.n < 20", { n: ["integer", "{LEDGER[n]}"] }) });
		await indexBuilt(admin.secret, "t");
		expect(Object.keys(await propertiesOf(admin.secret, "t")).sort()).toEqual(twins.slice(0, 20));
		const { uuid, generation } = await indexTableRow(admin.account, "t");

		const updated = await call("PATCH", indexPath("t"), { secret: admin.secret, body: { rule: "LEDGER.n >= 20" } });
		expect(updated.status).toBe(200);
		expect(updated.body).toMatchObject({
			rule: "LEDGER.n >= 20",
			status: "building",
			stats: { rows: 0, table_size: 0 },
		});
		// Not one old row, from the first read on.
		const early = await propertiesOf(admin.secret, "t");
		expect(Object.values(early).every((p) => (p.n as number) >= 20)).toBe(true);

		const ready = await indexBuilt(admin.secret, "t");
		expect(ready.status).toBe("ready");
		expect(Object.keys(await propertiesOf(admin.secret, "t")).sort()).toEqual(twins.slice(20));
		await expectExactStats(admin.secret, "t");
		expect((await indexTableRow(admin.account, "t")).generation).toBe(generation + 1);
		await until(
			() => oldIndexRows(uuid, generation + 1),
			(n) => n === 0,
			"the old generation's rows to go",
		);
	});

	it("on new properties or templates, types included", async () => {
		const admin = await bootstrap();
		await seededLedgers(admin.account, 5, (i) => ({ n: i, tag: `t${i}` }));
		await createIndexes(admin.secret, { t: byN });
		await indexBuilt(admin.secret, "t");
		let { generation } = await indexTableRow(admin.account, "t");
		const changes = [
			{ templates: { properties: { n: "{LEDGER[n]}0", tag: "{LEDGER[tag]}" } } },
			{ properties: { names: ["n", "tag"], types: ["text", "string"] } },
			{ properties: { names: ["tag"], types: ["string"] }, templates: { properties: { tag: "<{LEDGER[tag]}>" } } },
		];
		for (const body of changes) {
			const res = await call("PATCH", indexPath("t"), { secret: admin.secret, body });
			expect(res.status, JSON.stringify(res.body)).toBe(200);
			expect(res.body.status).toBe("building");
			await indexBuilt(admin.secret, "t");
			expect((await indexTableRow(admin.account, "t")).generation).toBe(++generation);
		}
		const rows = Object.values(await propertiesOf(admin.secret, "t"));
		expect(rows.map((p) => p.tag).sort()).toEqual(["<t0>", "<t1>", "<t2>", "<t3>", "<t4>"]);
		expect(rows.every((p) => Object.keys(p).join() === "tag")).toBe(true);
	});

	it("not for the same definition: the record, its status, its rows and its cursors stay", async () => {
		const admin = await bootstrap();
		await seededLedgers(admin.account, 5, (i) => ({ n: i, tag: `t${i}` }));
		const twoTemplates = indexDefinition("LEDGER.n >= 0", {
			n: ["integer", "{LEDGER[n]}"],
			tag: ["string", "{LEDGER[tag]}"],
		});
		await createIndexes(admin.secret, { t: twoTemplates });
		const ready = await indexBuilt(admin.secret, "t");
		const before = await indexTableRow(admin.account, "t");
		const rows = await indexRowsByTwin(admin.secret, "t");
		const cursor = (await queryIndex(admin.secret, "t", { count: 2 })).body.cursor;
		await until(
			() => indexWorkLeft(admin.account),
			(n) => n === 0,
			"the alarm's index work",
		);

		const sameBodies = [
			twoTemplates,
			{ rule: twoTemplates.rule },
			{ properties: twoTemplates.properties },
			// The same templates, listed in another order: a map, the same definition.
			{ templates: { properties: { tag: "{LEDGER[tag]}", n: "{LEDGER[n]}" } } },
		];
		for (const body of sameBodies) {
			const res = await call("PATCH", indexPath("t"), { secret: admin.secret, body });
			expect(res.status).toBe(200);
			expect(res.body, JSON.stringify(body)).toEqual(ready);
			// No build and nothing to delete was given to the alarm.
			expect(await indexWorkLeft(admin.account)).toBe(0);
		}
		expect(await indexTable(admin.secret, "t")).toEqual(ready);
		expect(await indexTableRow(admin.account, "t")).toEqual(before);
		expect(await indexRowsByTwin(admin.secret, "t")).toEqual(rows);
		expect((await queryIndex(admin.secret, "t", { count: 2, cursor })).status).toBe(200);
	});
});

describe("delete and truncate", () => {
	it("delete frees the name at once; a new table of the name starts empty and builds from the ledgers", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 30, (i) => ({ n: i, tag: i < 15 ? "low" : "high" }));
		await createIndexes(admin.secret, { t: indexDefinition("LEDGER.tag == 'low'", { n: ["integer", "{LEDGER[n]}"] }) });
		await indexBuilt(admin.secret, "t");
		expect(Object.keys(await propertiesOf(admin.secret, "t")).sort()).toEqual(twins.slice(0, 15));
		const old = await indexTableRow(admin.account, "t");

		expect((await call("DELETE", indexPath("t"), { secret: admin.secret })).status).toBe(200);
		const made = await createIndexes(admin.secret, {
			t: indexDefinition("LEDGER.tag == 'high'", { n: ["integer", "{LEDGER[n]}"] }),
		});
		expect(made.t).toMatchObject({
			status: "building",
			stats: { rows: 0, table_size: 0 },
			rule: "LEDGER.tag == 'high'",
		});
		expect(Object.keys(await propertiesOf(admin.secret, "t")).every((twin) => twins.indexOf(twin) >= 15)).toBe(true);
		await indexBuilt(admin.secret, "t");
		expect(Object.keys(await propertiesOf(admin.secret, "t")).sort()).toEqual(twins.slice(15));
		await expectExactStats(admin.secret, "t");
		await until(
			() => oldIndexRows(old.uuid, old.generation + 1),
			(n) => n === 0,
			"the deleted table's rows to go",
		);

		// The same definition again, after a delete: a table of its own, built again.
		expect((await call("DELETE", indexPath("t"), { secret: admin.secret })).status).toBe(200);
		const same = await createIndexes(admin.secret, {
			t: indexDefinition("LEDGER.tag == 'high'", { n: ["integer", "{LEDGER[n]}"] }),
		});
		expect(same.t).toMatchObject({ status: "building", stats: { rows: 0, table_size: 0 } });
		await indexBuilt(admin.secret, "t");
		expect(Object.keys(await propertiesOf(admin.secret, "t")).sort()).toEqual(twins.slice(15));
	});

	it("truncate empties the table and sets `ready`; rows come back only as their ledgers change", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 10, (i) => ({ n: i, tag: "x" }));
		await createIndexes(admin.secret, { t: byN });
		const built = await indexBuilt(admin.secret, "t");
		expect(built.stats.rows).toBe(10);
		const { uuid, generation } = await indexTableRow(admin.account, "t");

		const truncated = await call("DELETE", indexPath("t", "/data"), { secret: admin.secret });
		expect(truncated.status).toBe(200);
		expect(Object.keys(truncated.body)).toEqual([
			"stats",
			"rule",
			"properties",
			"templates",
			"status",
			"created_ts",
			"updated_ts",
		]);
		expect(truncated.body).toMatchObject({
			stats: { rows: 0, table_size: 0 },
			status: "ready",
			rule: byN.rule,
			properties: byN.properties,
			templates: byN.templates,
		});
		expect(truncated.body.created_ts).toBe(built.created_ts);
		expect(await indexTable(admin.secret, "t")).toEqual(truncated.body);
		expect(await propertiesOf(admin.secret, "t")).toEqual({});

		expect(
			(await call("PATCH", ledger(twins[3]), { secret: admin.secret, body: { entries: { tag: { value: "back" } } } }))
				.status,
		).toBe(200);
		expect(await propertiesOf(admin.secret, "t")).toEqual({ [twins[3]]: { n: 3, tag: "back" } });
		// Once the alarm has done its work the old rows are gone, and nothing was built.
		await until(
			() => indexWorkLeft(admin.account),
			(n) => n === 0,
			"the alarm's index work",
		);
		expect(await oldIndexRows(uuid, generation + 1)).toBe(0);
		expect(await propertiesOf(admin.secret, "t")).toEqual({ [twins[3]]: { n: 3, tag: "back" } });
		const after = await expectExactStats(admin.secret, "t");
		expect(after.status).toBe("ready");
		expect(after.stats.rows).toBe(1);
	});

	it("truncate stops a build", async () => {
		const admin = await bootstrap();
		const twins = await seededLedgers(admin.account, 2000, (i) => ({ n: i }));
		expect((await createIndexes(admin.secret, { t: byN })).t.status).toBe("building");
		const truncated = await call("DELETE", indexPath("t", "/data"), { secret: admin.secret });
		expect(truncated.body).toMatchObject({ stats: { rows: 0, table_size: 0 }, status: "ready" });
		const { uuid, generation } = await indexTableRow(admin.account, "t");
		await until(
			() => indexWorkLeft(admin.account),
			(n) => n === 0,
			"the alarm's index work",
		);
		expect(await oldIndexRows(uuid, generation)).toBe(0);
		expect(await propertiesOf(admin.secret, "t")).toEqual({});
		expect(
			(await call("PATCH", ledger(twins[1999]), { secret: admin.secret, body: { entries: { n: { value: 5 } } } }))
				.status,
		).toBe(200);
		expect(await propertiesOf(admin.secret, "t")).toEqual({ [twins[1999]]: { n: 5, tag: null } });
		expect((await expectExactStats(admin.secret, "t")).status).toBe("ready");
	}, 90_000);

	it("deleting a table while it builds leaves none of its rows", async () => {
		const admin = await bootstrap();
		await seededLedgers(admin.account, 1500, (i) => ({ n: i }));
		await createIndexes(admin.secret, { t: byN });
		const { uuid } = await indexTableRow(admin.account, "t");
		expect((await call("DELETE", indexPath("t"), { secret: admin.secret })).status).toBe(200);
		await until(
			() => indexWorkLeft(admin.account),
			(n) => n === 0,
			"the alarm's index work",
		);
		expect(await oldIndexRows(uuid, Number.MAX_SAFE_INTEGER)).toBe(0);
		// A new table of the name builds on its own.
		expect((await createIndexes(admin.secret, { t: byN })).t.status).toBe("building");
		expect((await indexBuilt(admin.secret, "t", 60_000)).stats.rows).toBe(1500);
		expect(await oldIndexRows(uuid, Number.MAX_SAFE_INTEGER)).toBe(0);
	}, 90_000);
});

describe("a build step", () => {
	// Run here on its own, outside the account's object (whose alarm has nothing to do: the
	// table was made before the ledgers, so `ready`), to see where each step stops.
	async function stepsOver(ledgers: (i: number) => Record<string, unknown>, count: number, rule = "true") {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { t: indexDefinition(rule, { n: ["integer", "{LEDGER[n]}"] }) });
		const twins = await seededLedgers(admin.account, count, ledgers);
		const { uuid } = await indexTableRow(admin.account, "t");
		const db = database(dbOf(admin.account));
		const catalog = new IndexCatalog(() => db);
		const limits = { tables: 10, rows: 100_000 };
		const stops: (string | null)[] = [];
		let after = "";
		for (;;) {
			const next = await buildStep(db, catalog, admin.account, uuid, after, Date.now() / 1000, limits, env);
			stops.push(next);
			if (next === null) break;
			after = next;
		}
		return { admin, twins, stops };
	}

	it(`takes at most ${BUILD_LEDGERS} ledgers`, async () => {
		const { admin, twins, stops } = await stepsOver((n) => ({ n }), 450);
		expect(stops).toEqual([twins[199], twins[399], twins[449], null]);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t")).sort()).toEqual(twins);
	});

	it("takes at most 2 MiB of entries, and one ledger at least", async () => {
		const pad = "x".repeat(60_000);
		const { admin, twins, stops } = await stepsOver((n) => ({ n, pad }), 40);
		// What a seeded ledger's entries count: each name as JSON, a colon, the value's JSON.
		const size = bytes('"n"') + 1 + 2 + bytes('"pad"') + 1 + bytes(JSON.stringify(pad));
		const perStep = Math.floor(BUILD_BYTES / size);
		expect(perStep).toBeLessThan(40);
		expect(stops[0]).toBe(twins[perStep - 1]);
		expect(stops.at(-1)).toBeNull();
		expect(stops).toHaveLength(Math.ceil(40 / perStep) + 1);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t")).sort()).toEqual(twins);
	});

	it(`stops after the ledger whose rows take its work past ${BUILD_WORK_UNITS} units`, async () => {
		// About 90,000 units a ledger: three comparisons of a 30,000-character string.
		const rule = "LEDGER.s < 'a' or LEDGER.s < 'a' or LEDGER.s > 'a'";
		const s = "b".repeat(30_000);
		const { admin, twins, stops } = await stepsOver((n) => ({ n, s }), 30, rule);
		// Far under the step's ledgers and bytes, 12 ledgers pass 1,000,000 units.
		const perStep = Math.ceil(BUILD_WORK_UNITS / 90_003);
		expect(perStep).toBe(12);
		expect(stops).toEqual([twins[11], twins[23], twins[29], null]);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t")).sort()).toEqual(twins);
	});
});

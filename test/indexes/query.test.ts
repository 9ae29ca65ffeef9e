import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { createIndexes, indexBuilt, indexDefinition, indexPath, indexRows, queryIndex, seedIndexRows } from "./helpers";

// query_indexes_table (docs/indexes.md "Querying"): a keyset walk in twin order, `match` over the row, sealed
// cursors bound to the table, its generation and the match, and a cost bounded by `count`.

const definition = indexDefinition("true", {
	n: ["integer", "{LEDGER[n]}"],
	s: ["string", "{LEDGER[s]}"],
	odd: ["boolean", "{LEDGER[odd]}"],
});

const sortedUuids = (count: number) => Array.from({ length: count }, () => crypto.randomUUID()).sort();

// An account with a table `q` (made before any ledger, so `ready` and generation 1) holding
// `count` rows written straight into D1: row i has n = i, s = "row <i>", odd = i is odd.
async function seeded(count: number, properties?: (i: number) => Record<string, unknown>) {
	const admin = await bootstrap();
	await createIndexes(admin.secret, { q: definition });
	const twins = sortedUuids(count);
	const made = properties ?? ((i: number) => ({ n: i, s: `row ${i}`, odd: i % 2 === 1 }));
	await seedIndexRows(
		admin.account,
		"q",
		twins.map((twin, i) => ({ twin, properties: made(i) })),
	);
	return { admin, twins };
}

describe("query_indexes_table answers", () => {
	it("rows in twin order, each {twin, properties in names order (null when no value), updated_ts}", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { q: definition });
		const twins: string[] = [];
		for (let i = 0; i < 4; i++) {
			const twin = await newTwin(admin.secret);
			twins.push(twin);
			await addEntries(
				admin.secret,
				twin,
				i === 3
					? { s: { value: "only s" } }
					: { odd: { value: i % 2 === 1 }, s: { value: `row ${i}` }, n: { value: i } },
			);
		}
		const res = await queryIndex(admin.secret, "q");
		expect(res.status).toBe(200);
		expect(Object.keys(res.body)).toEqual(["cursor", "rows"]);
		expect(res.body.cursor).toBeNull();
		expect(res.body.rows.map((row: { twin: string }) => row.twin)).toEqual([...twins].sort());
		for (const row of res.body.rows) {
			expect(Object.keys(row)).toEqual(["twin", "properties", "updated_ts"]);
			expect(Object.keys(row.properties)).toEqual(["n", "s", "odd"]);
			expect(typeof row.updated_ts).toBe("number");
		}
		const only = res.body.rows.find((row: { twin: string }) => row.twin === twins[3]);
		expect(only.properties).toEqual({ n: null, s: "only s", odd: null });
		const first = res.body.rows.find((row: { twin: string }) => row.twin === twins[1]);
		expect(first.properties).toEqual({ n: 1, s: "row 1", odd: true });
	});

	it("the rows that pass match, over ROW.<property> and twin", async () => {
		const { admin, twins } = await seeded(10);
		const twinsWhere = async (match: string) => {
			const res = await queryIndex(admin.secret, "q", { match });
			expect(res.status, JSON.stringify(res.body)).toBe(200);
			expect(res.body.cursor).toBeNull();
			return res.body.rows.map((row: { twin: string }) => row.twin);
		};
		expect(await twinsWhere("ROW.n > 5")).toEqual(twins.slice(6));
		expect(await twinsWhere("ROW.odd == true and ROW.n < 5")).toEqual([twins[1], twins[3]]);
		expect(await twinsWhere("ROW.s =~ '^row [0-2]$'")).toEqual(twins.slice(0, 3));
		expect(await twinsWhere("ROW.s in ['row 4', 'row 7']")).toEqual([twins[4], twins[7]]);
		expect(await twinsWhere(`twin == '${twins[5]}'`)).toEqual([twins[5]]);
		expect(await twinsWhere(`twin in ['${twins[2]}', '${twins[9]}'] and not (ROW.n == 9)`)).toEqual([twins[2]]);
		// An unknown property reads null.
		expect(await twinsWhere("ROW.unknown == null and ROW.n.x == null")).toEqual(twins);
		expect(await twinsWhere("false")).toEqual([]);
	});

	it("null for every other root: the caller's names, the clock, the twin's fields, the ledger", async () => {
		const { admin, twins } = await seeded(3);
		const nulls = [
			"account",
			"user",
			"role",
			"owner",
			"now",
			"twin_status",
			"identity",
			"TWIN.x",
			"USER.x",
			"DICT.x",
			"LEDGER.n",
			"ledger",
			"entry_name",
			"entry_value",
			"entry_created_ts",
			"entry_updated_ts",
			"value_changed_ts",
			"trigger",
			"old_value",
		];
		const all = await queryIndex(admin.secret, "q", { match: nulls.map((name) => `${name} == null`).join(" and ") });
		expect(all.status).toBe(200);
		expect(all.body.rows.map((row: { twin: string }) => row.twin)).toEqual(twins);
		const none = await queryIndex(admin.secret, "q", {
			match: `account == '${admin.account}' or user == '${admin.user}' or owner == '${admin.account}'`,
		});
		expect(none.body.rows).toEqual([]);
	});

	it("holds rows as typed values, so match compares them as such", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, {
			q: indexDefinition("true", { n: ["integer", "{LEDGER[n]}"], t: ["timestamp", "{LEDGER[t]}"] }),
		});
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { n: { value: "42" }, t: { value: "2024-01-01T00:00:00Z" } });
		const res = await queryIndex(admin.secret, "q", {
			match: `ROW.n == 42 and ROW.t == ${Date.UTC(2024, 0, 1) / 1000}`,
		});
		expect(res.body.rows.map((row: { twin: string }) => row.twin)).toEqual([twin]);
	});
});

describe("query_indexes_table refuses", () => {
	it("count outside 1..1000 and anything but an integer", async () => {
		const { admin } = await seeded(3);
		for (const count of ["0", "1001", "x", "-1", "1.5", "", "10000", " 5"]) {
			const res = await queryIndex(admin.secret, "q", { count });
			expectError(res, 400, 400101);
			expect(res.body.details.map((d: { path: string }) => d.path)).toEqual(["count"]);
		}
		for (const count of ["1", "1000"]) expect((await queryIndex(admin.secret, "q", { count })).status).toBe(200);
	});

	it("unknown parameters", async () => {
		const { admin } = await seeded(1);
		for (const name of ["foo", "limit", "details", "entries", "order"]) {
			const res = await queryIndex(admin.secret, "q", { [name]: "1" });
			expectError(res, 400, 400101);
			expect(res.body.details).toEqual([{ path: name, message: expect.any(String) }]);
		}
	});

	it("a malformed match, with its position", async () => {
		const { admin } = await seeded(1);
		const cases: [string, RegExp][] = [
			["ROW.n >", /position 7\b/],
			["ROW.n == 1 and (", /position/],
			["unknown == 1", /position 0\b/],
			["ROW.s =~ '(a)\\\\1'", /position/],
			[`ROW.s == '${"x".repeat(1030)}'`, /1024/],
			["ROW.n == 1e999", /position/],
		];
		for (const [match, message] of cases) {
			const res = await queryIndex(admin.secret, "q", { match });
			expectError(res, 400, 400101);
			expect(res.body.details[0]).toEqual({ path: "match", message: expect.stringMatching(message) });
		}
	});
});

describe("query_indexes_table cursors", () => {
	it("walk every row that passes match exactly once; a page may hold fewer than count while the cursor is not null", async () => {
		const { admin, twins } = await seeded(57);
		const { rows, pages } = await indexRows(admin.secret, "q", { count: 5, match: "ROW.odd == true and ROW.n != 21" });
		const expected = twins.filter((_, i) => i % 2 === 1 && i !== 21);
		expect(rows.map((row) => row.twin)).toEqual(expected);
		expect(pages).toHaveLength(12);
		expect(pages.at(-1)!.cursor).toBeNull();
		expect(pages.slice(0, -1).every((page) => page.cursor !== null && page.rows.length < 5)).toBe(true);
		// A match nothing passes: empty pages, each with a cursor, to the end.
		const none = await indexRows(admin.secret, "q", { count: 20, match: "ROW.n < 0" });
		expect(none.rows).toEqual([]);
		expect(none.pages.map((page) => page.cursor === null)).toEqual([false, false, true]);
	});

	it("end with a null cursor, also when the last page is exactly full", async () => {
		const { admin, twins } = await seeded(10);
		const exact = await indexRows(admin.secret, "q", { count: 5 });
		expect(exact.rows.map((row) => row.twin)).toEqual(twins);
		expect(exact.pages.at(-1)!.cursor).toBeNull();
		expect(exact.pages.slice(0, -1).every((page) => page.cursor !== null)).toBe(true);
		const whole = await queryIndex(admin.secret, "q", { count: 11 });
		expect(whole.body.cursor).toBeNull();
		expect(whole.body.rows).toHaveLength(10);
	});

	it("take 100 rows by default", async () => {
		const { admin, twins } = await seeded(150);
		const first = await queryIndex(admin.secret, "q");
		expect(first.body.rows.map((row: { twin: string }) => row.twin)).toEqual(twins.slice(0, 100));
		const second = await queryIndex(admin.secret, "q", { cursor: first.body.cursor });
		expect(second.body.rows.map((row: { twin: string }) => row.twin)).toEqual(twins.slice(100));
		expect(second.body.cursor).toBeNull();
	});

	it("repeat a page when a cursor is given again", async () => {
		const { admin } = await seeded(20);
		const first = await queryIndex(admin.secret, "q", { count: 4, match: "ROW.n >= 3" });
		const again = [
			await queryIndex(admin.secret, "q", { count: 4, match: "ROW.n >= 3", cursor: first.body.cursor }),
			await queryIndex(admin.secret, "q", { count: 4, match: "ROW.n >= 3", cursor: first.body.cursor }),
		];
		expect(again[0].status).toBe(200);
		expect(again[1].body.rows).toEqual(again[0].body.rows);
		const next = await Promise.all(
			again.map((page) => queryIndex(admin.secret, "q", { count: 4, match: "ROW.n >= 3", cursor: page.body.cursor })),
		);
		expect(next[1].body.rows).toEqual(next[0].body.rows);
		expect(next[0].body.rows).toHaveLength(4);
	});

	it("give every row that exists from start to end exactly once while ledgers change between pages, none that never existed", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { q: indexDefinition("LEDGER.on == true", { n: ["integer", "{LEDGER[n]}"] }) });
		const twins: string[] = [];
		for (let i = 0; i < 12; i++) {
			const twin = await newTwin(admin.secret);
			twins.push(twin);
			await addEntries(admin.secret, twin, { on: { value: true }, n: { value: i } });
		}
		const sorted = [...twins].sort();
		const gone = new Set([sorted[1], sorted[10]]);
		const late: string[] = [];
		const seen: string[] = [];
		let cursor: string | null = null;
		let page = 0;
		do {
			const res = await queryIndex(admin.secret, "q", { count: 3, ...(cursor ? { cursor } : {}) });
			expect(res.status).toBe(200);
			seen.push(...res.body.rows.map((row: { twin: string }) => row.twin));
			cursor = res.body.cursor;
			if (page === 0) {
				// Rows that go, rows that come and a row whose value changes, between pages.
				for (const twin of gone)
					expect(
						(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { on: { value: false } } } }))
							.status,
					).toBe(200);
				for (let i = 0; i < 3; i++) {
					const twin = await newTwin(admin.secret);
					late.push(twin);
					await addEntries(admin.secret, twin, { on: { value: true } });
				}
				expect(
					(await call("PATCH", ledger(sorted[7]), { secret: admin.secret, body: { entries: { n: { value: 700 } } } }))
						.status,
				).toBe(200);
			}
			page++;
		} while (cursor !== null);
		const always = sorted.filter((twin) => !gone.has(twin));
		for (const twin of always) expect(seen.filter((t) => t === twin)).toHaveLength(1);
		expect(new Set(seen).size).toBe(seen.length);
		for (const twin of seen) expect([...twins, ...late]).toContain(twin);
		expect(seen).toEqual([...seen].sort());
		// sorted[1] was on the first page (it went after): seen once; sorted[10] went before its page.
		expect(seen).toContain(sorted[1]);
		expect(seen).not.toContain(sorted[10]);
	});

	it("refuse a forged or undecodable cursor with 400104", async () => {
		const { admin } = await seeded(10);
		const page = await queryIndex(admin.secret, "q", { count: 3 });
		const cursor: string = page.body.cursor;
		const flipped = cursor.slice(0, 20) + (cursor[20] === "A" ? "B" : "A") + cursor.slice(21);
		for (const forged of [
			"abc",
			"",
			"!!!!",
			flipped,
			cursor.slice(0, -2),
			`${cursor}AA`,
			btoa(JSON.stringify(["ffffffff"])),
			"A".repeat(1025),
		]) {
			expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: forged }), 400, 400104);
		}
	});

	it("refuse with 400104 a cursor of another table, of another account's table of the same name, or of another match", async () => {
		const { admin } = await seeded(10);
		await createIndexes(admin.secret, { other: definition });
		await seedIndexRows(
			admin.account,
			"other",
			sortedUuids(10).map((twin, n) => ({ twin, properties: { n } })),
		);
		const other = await bootstrap();
		await createIndexes(other.secret, { q: definition });
		await seedIndexRows(
			other.account,
			"q",
			sortedUuids(10).map((twin, n) => ({ twin, properties: { n } })),
		);

		const ours = (await queryIndex(admin.secret, "q", { count: 3 })).body.cursor;
		const fromOther = (await queryIndex(admin.secret, "other", { count: 3 })).body.cursor;
		const theirs = (await queryIndex(other.secret, "q", { count: 3 })).body.cursor;
		const matched = (await queryIndex(admin.secret, "q", { count: 3, match: "ROW.n >= 0" })).body.cursor;
		expect([ours, fromOther, theirs, matched].every((c) => typeof c === "string")).toBe(true);

		expect((await queryIndex(admin.secret, "q", { count: 3, cursor: ours })).status).toBe(200);
		expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: fromOther }), 400, 400104);
		expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: theirs }), 400, 400104);
		expectError(await queryIndex(other.secret, "q", { count: 3, cursor: ours }), 400, 400104);
		expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: matched }), 400, 400104);
		expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: matched, match: "ROW.n >= 1" }), 400, 400104);
		expectError(await queryIndex(admin.secret, "q", { count: 3, cursor: ours, match: "true" }), 400, 400104);
		expect((await queryIndex(admin.secret, "q", { count: 3, cursor: matched, match: "ROW.n >= 0" })).status).toBe(200);
		// The count may change from page to page.
		expect((await queryIndex(admin.secret, "q", { count: 7, cursor: ours })).body.rows).toHaveLength(7);
	});

	it("refuse with 400104 a cursor issued before a truncate, a rebuild, or a delete and a new table of the name", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { q: indexDefinition("true", { n: ["integer", "{LEDGER[n]}"] }) });
		for (let n = 0; n < 4; n++) await addEntries(admin.secret, await newTwin(admin.secret), { n: { value: n } });
		const cursorNow = async () => {
			const res = await queryIndex(admin.secret, "q", { count: 1 });
			expect(res.body.cursor).toEqual(expect.any(String));
			return res.body.cursor as string;
		};

		// The same definition again is no rebuild: the cursor holds.
		let cursor = await cursorNow();
		expect((await call("PATCH", indexPath("q"), { secret: admin.secret, body: { rule: "true" } })).status).toBe(200);
		expect((await queryIndex(admin.secret, "q", { count: 1, cursor })).status).toBe(200);

		expect((await call("DELETE", indexPath("q", "/data"), { secret: admin.secret })).status).toBe(200);
		expectError(await queryIndex(admin.secret, "q", { count: 1, cursor }), 400, 400104);

		expect(
			(await call("PATCH", indexPath("q"), { secret: admin.secret, body: { rule: "LEDGER.n >= 0" } })).status,
		).toBe(200);
		await indexBuilt(admin.secret, "q");
		cursor = await cursorNow();
		expect(
			(await call("PATCH", indexPath("q"), { secret: admin.secret, body: { rule: "LEDGER.n >= 1" } })).status,
		).toBe(200);
		expectError(await queryIndex(admin.secret, "q", { count: 1, cursor }), 400, 400104);
		await indexBuilt(admin.secret, "q");

		cursor = await cursorNow();
		expect((await call("DELETE", indexPath("q"), { secret: admin.secret })).status).toBe(200);
		await createIndexes(admin.secret, { q: indexDefinition("LEDGER.n >= 1", { n: ["integer", "{LEDGER[n]}"] }) });
		await indexBuilt(admin.secret, "q");
		expectError(await queryIndex(admin.secret, "q", { count: 1, cursor }), 400, 400104);
	});
});

describe("query_indexes_table bounds", () => {
	// The D1 rows a page reads: the key walk (at most `count`), authentication and the lookup.
	const rowsRead = (res: { headers: Headers }) => d1Cost(res, "rows_read");

	it("reads at most count + 10 D1 rows per page of a 10,000-row table, whatever the match, at the start, the middle and the end", async () => {
		const { admin, twins } = await seeded(10_000);
		for (const match of [undefined, "ROW.n < 0", "ROW.n >= 0", "ROW.s =~ '5$'"]) {
			const query: Record<string, string> = match === undefined ? {} : { match };
			// A full walk: every row once, in order; each page within its bound.
			const seen: string[] = [];
			const cursors: string[] = [];
			let cursor: string | null = null;
			do {
				const res = await queryIndex(admin.secret, "q", { ...query, count: 1000, ...(cursor ? { cursor } : {}) });
				expect(res.status).toBe(200);
				expect(rowsRead(res)).toBeLessThanOrEqual(1010);
				seen.push(...res.body.rows.map((row: { twin: string }) => row.twin));
				cursor = res.body.cursor;
				if (cursor) cursors.push(cursor);
			} while (cursor !== null);
			const expected =
				match === undefined || match === "ROW.n >= 0"
					? twins
					: match === "ROW.n < 0"
						? []
						: twins.filter((_, i) => String(i).endsWith("5"));
			expect(seen).toEqual(expected);
			// Small pages from the start, the middle and near the end.
			for (const at of [undefined, cursors[4], cursors.at(-1)]) {
				for (const count of [1, 100]) {
					const res = await queryIndex(admin.secret, "q", { ...query, count, ...(at ? { cursor: at } : {}) });
					expect(res.status).toBe(200);
					expect(rowsRead(res), `${match} ${count} ${at ? "after" : "start"}`).toBeLessThanOrEqual(count + 10);
				}
			}
		}
	}, 90_000);

	it("stops a page before its answer passes 4 MiB, with a cursor, and walks every row once", async () => {
		// 100 rows of 32 strings of 1024 two-byte characters: about 66 KB each.
		const big = "é".repeat(1024);
		const properties = Object.fromEntries(
			Array.from({ length: 32 }, (_, i) => [`p${i}`, ["string", `{LEDGER[p${i}]}`] as [string, string]]),
		);
		const admin = await bootstrap();
		await createIndexes(admin.secret, { wide: indexDefinition("true", properties) });
		const twins = sortedUuids(100);
		for (let i = 0; i < twins.length; i += 10) {
			await seedIndexRows(
				admin.account,
				"wide",
				twins.slice(i, i + 10).map((twin) => ({
					twin,
					properties: Object.fromEntries(Object.keys(properties).map((name) => [name, big])),
				})),
			);
		}
		const first = await queryIndex(admin.secret, "wide", { count: 100 });
		expect(first.status).toBe(200);
		expect(first.body.cursor).not.toBeNull();
		expect(first.body.rows.length).toBeGreaterThan(1);
		expect(first.body.rows.length).toBeLessThan(100);
		expect(new TextEncoder().encode(JSON.stringify(first.body)).length).toBeLessThanOrEqual(4 * 1024 * 1024);
		const { rows, pages } = await indexRows(admin.secret, "wide", { count: 100 });
		expect(rows.map((row) => row.twin)).toEqual(twins);
		expect(pages.length).toBeGreaterThan(1);
		for (const page of pages)
			expect(new TextEncoder().encode(JSON.stringify(page)).length).toBeLessThanOrEqual(4 * 1024 * 1024);
	}, 90_000);

	it("stops a page once match has used the work budget, and refuses a row that alone needs more than twice it", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { q: definition });
		const twins = sortedUuids(7);
		// Each row's 1024-character string costs a pattern of about 600 instructions some 600,000 units.
		const s = (i: number) => (i % 3 === 0 ? "x".repeat(600) + "a".repeat(424) : "a".repeat(1024));
		await seedIndexRows(
			admin.account,
			"q",
			twins.map((twin, n) => ({ twin, properties: { n, s: s(n) } })),
		);
		const match = "ROW.s =~ 'x{600}'";
		const first = await queryIndex(admin.secret, "q", { count: 100, match });
		expect(first.status).toBe(200);
		expect(first.body.cursor).not.toBeNull();
		const { rows, pages } = await indexRows(admin.secret, "q", { count: 100, match });
		expect(rows.map((row) => row.twin)).toEqual([twins[0], twins[3], twins[6]]);
		expect(pages.length).toBeGreaterThan(2);

		// About 3,000,000 units for one row: refused, naming match.
		const costly = await queryIndex(admin.secret, "q", { count: 100, match: "ROW.s =~ 'x{1000}y{1000}z{1000}'" });
		expectError(costly, 400, 400101);
		expect(costly.body.details[0].path).toBe("match");
	});
});

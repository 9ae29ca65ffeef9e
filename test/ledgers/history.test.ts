import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { clockPast } from "../support/waiting";
import { dbOf } from "../support/shards";

async function setValue(secret: string, twin: string, name: string, value: unknown) {
	const res = await call("PATCH", ledger(twin, "personal", "/value"), {
		secret,
		body: { entries: { [name]: { value } } },
	});
	expect(res.status).toBe(200);
	return res.body.entries[name];
}

// The records of an answer, newest first. The service sends them newest first, but a JSON
// object key that is a whole number (a timestamp on an exact second) is put first, in
// ascending order, by any JavaScript parser: order them by timestamp to compare.
function records(answer: Record<string, unknown>) {
	return Object.entries(answer).sort(([a], [b]) => Number(b) - Number(a));
}

async function stored(twin: string, name: string) {
	const { results } = await dbOf(twin)
		.prepare("SELECT ts FROM ledger_history WHERE twin = ? AND name = ? ORDER BY ts")
		.bind(twin, name)
		.all<{ ts: number }>();
	return results.map((r) => r.ts);
}

// Records written straight into D1, at the given timestamps, as history left by earlier writes.
async function seedHistory(
	twin: string,
	account: string,
	name: string,
	stamps: number[],
	value = (ts: number): unknown => ({ seeded: ts }),
) {
	const db = dbOf(account);
	const insert = db.prepare(
		"INSERT INTO ledger_history (twin, account, name, ts, value, bytes) VALUES (?1, ?2, ?3, ?4, ?5, length(CAST(?5 AS BLOB)))",
	);
	const rows = stamps.map((ts) => insert.bind(twin, account, name, ts, JSON.stringify(value(ts))));
	// A batch of D1 is bounded in size as well as in statements.
	for (let i = 0; i < rows.length; i += 20) await db.batch(rows.slice(i, i + 20));
}

type Page = {
	status: number;
	bytes: number;
	entries: Record<string, Record<string, unknown> | string>;
	cursor: string | null;
};

// Every page of a history read, following the cursors.
async function walkHistory(secret: string, path: string): Promise<Page[]> {
	const pages: Page[] = [];
	let cursor: string | null = null;
	do {
		const res = await call("GET", `${path}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, { secret });
		pages.push({
			status: res.status,
			bytes: JSON.stringify(res.body).length,
			entries: res.body.entries,
			cursor: res.body.cursor,
		});
		cursor = res.body.cursor ?? null;
	} while (cursor !== null && pages.length < 50);
	return pages;
}

// What a walk answered of each entry, merged, and how many times each record came.
function merged(pages: Page[]) {
	const entries: Record<string, Record<string, unknown> | string> = {};
	let records = 0;
	for (const page of pages) {
		for (const [name, value] of Object.entries(page.entries)) {
			if (typeof value === "string") entries[name] = value;
			else {
				records += Object.keys(value).length;
				entries[name] = { ...(entries[name] as Record<string, unknown>), ...value };
			}
		}
	}
	return { entries, records };
}

describe("ledger entry history", () => {
	it("records creation and every value change, newest first, within ge, le and limit", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const first = (await addEntries(admin.secret, twin, { level: { value: 0, history: "INF" }, plain: { value: 0 } }))
			.level;
		const stamps = [first.value_changed_ts];
		for (const value of [1, 2, 3]) {
			// Each change at a later time than the one before it.
			await clockPast(stamps.at(-1) as number);
			stamps.push((await setValue(admin.secret, twin, "level", value)).value_changed_ts);
		}
		const all = await call("GET", ledger(twin, "personal", "/history?entries=level,plain"), { secret: admin.secret });
		expect(all.status).toBe(200);
		expect(records(all.body.entries.level)).toEqual([...stamps].reverse().map((ts, i) => [String(ts), 3 - i]));
		expect(all.body.entries.plain).toBe("Entry not accessible.");

		const window = await call(
			"GET",
			ledger(twin, "personal", `/history?entries=level&ge=${stamps[1]}&le=${stamps[3]}&limit=2`),
			{ secret: admin.secret },
		);
		expect(records(window.body.entries.level).map(([, v]) => v)).toEqual([3, 2]);
		const everything = await call("GET", ledger(twin, "personal", "/history"), { secret: admin.secret });
		expect(Object.keys(everything.body.entries)).toEqual(["level"]);
		expectError(
			await call("GET", ledger(twin, "personal", "/history?ge=5&le=4"), { secret: admin.secret }),
			400,
			400101,
		);
		expectError(
			await call("GET", ledger(twin, "personal", "/history?limit=101"), { secret: admin.secret }),
			400,
			400101,
		);
	});

	it("starts with the current value when turned on, and drops the records when turned off or deleted", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { x: { value: "a" }, y: { value: 1, history: "2W" } });
		const on = await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { x: { history: "1Y" } } } });
		expect(
			Object.values(
				(await call("GET", ledger(twin, "personal", "/history?entries=x"), { secret: admin.secret })).body.entries.x,
			),
		).toEqual(["a"]);
		expect(on.body.entries.x.history).toBe("1Y");
		await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { x: { history: null } } } });
		expect(await stored(twin, "x")).toEqual([]);
		await call("DELETE", ledger(twin, "personal", "?entries=y"), { secret: admin.secret });
		expect(await stored(twin, "y")).toEqual([]);
	});

	it("prunes on write what is older than the period", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = (await addEntries(admin.secret, twin, { daily: { value: 0, history: "1D" } })).daily
			.value_changed_ts;
		const old = created - 86_400 - 10;
		const recent = created - 3600;
		await seedHistory(twin, admin.account, "daily", [old, old + 1, recent]);
		const changed = (await setValue(admin.secret, twin, "daily", 1)).value_changed_ts;
		expect(await stored(twin, "daily")).toEqual([recent, created, changed].sort((a, b) => a - b));
	});

	it("keeps at most the 1000 newest records of an entry", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = (await addEntries(admin.secret, twin, { busy: { value: 0, history: "INF" } })).busy
			.value_changed_ts;
		const seeded = Array.from({ length: 1000 }, (_, i) => created - 1000 + i + 0.5);
		await seedHistory(twin, admin.account, "busy", seeded);
		expect(await stored(twin, "busy")).toHaveLength(1001);
		const changed = (await setValue(admin.secret, twin, "busy", 1)).value_changed_ts;
		const kept = await stored(twin, "busy");
		expect(kept).toHaveLength(1000);
		expect(kept.at(-1)).toBe(changed);
		expect(kept[0]).toBe(seeded[2]);
		const page = await call("GET", ledger(twin, "personal", "/history?entries=busy&limit=3"), { secret: admin.secret });
		expect(records(page.body.entries.busy).map(([, v]) => v)).toEqual([1, 0, { seeded: seeded[999] }]);
	});
});

describe("ledger entry history's pages", () => {
	it("stay under 4 MiB over records of 60 KB, and a walk of the cursors answers every record once", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, {
			a: { value: 0, history: "INF" },
			b: { value: 0, history: "INF" },
			c: { value: 0, history: "INF" },
		});
		const stamps = Array.from({ length: 100 }, (_, i) => 2_000_000_000 + i);
		const big = (ts: number) => ({ ts, text: "x".repeat(60_000) });
		for (const name of ["a", "b", "c"]) await seedHistory(twin, admin.account, name, stamps, big);

		const pages = await walkHistory(admin.secret, ledger(twin, "personal", "/history?entries=a,b,c,missing"));
		expect(pages.length).toBeGreaterThan(3);
		for (const page of pages) {
			expect(page.status).toBe(200);
			expect(page.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
			// Every page says the same of a name it cannot answer.
			expect(page.entries.missing).toBe("Entry not accessible.");
		}
		const { entries, records } = merged(pages);
		// 100 per entry by the default limit: the seeded ones, newer than the record of each creation.
		expect(records).toBe(300);
		for (const name of ["a", "b", "c"]) {
			const answered = entries[name] as Record<string, { ts: number; text: string }>;
			expect(Object.keys(answered).map(Number).sort()).toEqual(stamps);
			expect(
				Object.entries(answered).every(([ts, value]) => value.ts === Number(ts) && value.text.length === 60_000),
			).toBe(true);
		}

		// The per-entry limit counts from each entry's newest record, across pages.
		const limited = merged(
			await walkHistory(admin.secret, ledger(twin, "personal", "/history?entries=a,b,c&limit=30")),
		);
		expect(limited.records).toBe(90);
		expect(Object.keys(limited.entries.b).map(Number).sort()).toEqual(stamps.slice(70));
	});

	it("read at most 100 entries a page, however many keep history", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const names = Array.from({ length: 150 }, (_, i) => `e${String(i).padStart(3, "0")}`);
		for (let i = 0; i < names.length; i += 100) {
			await addEntries(
				admin.secret,
				twin,
				Object.fromEntries(names.slice(i, i + 100).map((name) => [name, { value: name, history: "INF" }])),
			);
		}
		const pages = await walkHistory(admin.secret, ledger(twin, "personal", "/history?limit=5"));
		expect(pages.length).toBe(2);
		const { entries, records } = merged(pages);
		expect(records).toBe(150);
		expect(Object.keys(entries).sort()).toEqual(names);
		for (const name of names) expect(Object.values(entries[name])).toEqual([name]);
	});

	it("refuse a forged cursor, and one from another query or another user", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 0, history: "INF" } });
		await seedHistory(
			twin,
			admin.account,
			"a",
			Array.from({ length: 100 }, (_, i) => 1_700_000_000 + i),
			() => "y".repeat(60_000),
		);
		const first = await call("GET", ledger(twin, "personal", "/history?entries=a"), { secret: admin.secret });
		expect(first.body.cursor).toEqual(expect.any(String));
		const cursor = encodeURIComponent(first.body.cursor);
		expect(
			(await call("GET", ledger(twin, "personal", `/history?entries=a&cursor=${cursor}`), { secret: admin.secret }))
				.status,
		).toBe(200);

		const other = await userWithRules(admin, {});
		for (const [secret, query] of [
			[admin.secret, `entries=a&limit=50&cursor=${cursor}`],
			[admin.secret, `cursor=${cursor}`],
			[other.secret, `entries=a&cursor=${cursor}`],
			[admin.secret, "entries=a&cursor=x"],
			// Its last two characters changed, to others than they were.
			[admin.secret, `entries=a&cursor=${cursor.slice(0, -2)}${cursor.endsWith("AA") ? "BB" : "AA"}`],
		]) {
			expectError(await call("GET", ledger(twin, "personal", `/history?${query}`), { secret }), 400, 400104);
		}
	});
});

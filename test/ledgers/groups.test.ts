import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { dbOf } from "../support/shards";
import { loggedErrors } from "../support/faults";

// The account's object groups the ledger writes that wait for it and keeps what they rest on
// (docs/design.md, "One round trip per write"). These check that what it keeps never decides
// anything D1 does not hold, and that grouped writes answer as one at a time would.

const counterOf = async (secret: string, twin: string) =>
	(await call("GET", ledger(twin, "personal", "/value"), { secret })).body.entries.counter.value as number;

describe("grouped ledger writes", () => {
	it("answer 32 racing compare-and-set writers on one entry as some serial order would", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { counter: { value: 0, history: "INF" } });
		const won: number[] = [];
		const lost: number[] = [];
		// Each writer reads the counter and sets it one higher if it still holds what it read.
		const writer = async () => {
			for (let attempt = 0; attempt < 4; attempt++) {
				const seen = await counterOf(admin.secret, twin);
				const res = await call("PATCH", ledger(twin, "personal", "/value"), {
					secret: admin.secret,
					body: { entries: { counter: { value: seen + 1 } }, conditions: { counter: `entry_value == ${seen}` } },
				});
				if (res.status === 200) {
					expect(res.body.entries.counter.value).toBe(seen + 1);
					won.push(seen + 1);
				} else {
					expectError(res, 409, 409102);
					lost.push(seen);
				}
			}
		};
		await Promise.all(Array.from({ length: 32 }, writer));
		// In a serial order each success moves the counter by one from what its writer read: the
		// successes set every value from 1 up once, and a refusal saw a value some success left.
		won.sort((a, b) => a - b);
		expect(won).toEqual(Array.from({ length: won.length }, (_, i) => i + 1));
		expect(won.length).toBeGreaterThan(1);
		expect(lost.length).toBeGreaterThan(0);
		for (const seen of lost) expect(seen).toBeLessThan(won.length);
		expect(await counterOf(admin.secret, twin)).toBe(won.length);
		// The history holds each committed value once, newest first.
		const history = await call("GET", `${ledger(twin, "personal", "/history")}?entries=counter`, {
			secret: admin.secret,
		});
		expect(history.status, JSON.stringify(history.body)).toBe(200);
		const values = Object.entries(history.body.entries.counter as Record<string, number>)
			.sort(([a], [b]) => Number(b) - Number(a))
			.map(([, value]) => value);
		expect(values).toEqual([...won].reverse().concat(0));
	});

	it("rest on the ledger as D1 holds it, when something else wrote it", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { counter: { value: 0 } });
		// The object now keeps the ledger with 0; a write it does not make sets 7 straight in D1.
		const at = Date.now() / 1000;
		await dbOf(admin.account)
			.prepare(
				"UPDATE ledger_entries SET value = '7', value_changed_ts = ?, entry_updated_ts = ? WHERE twin = ? AND name = 'counter'",
			)
			.bind(at, at, twin)
			.run();
		const res = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { counter: { value: 8 } }, conditions: { counter: "entry_value == 7" } },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		expect(await counterOf(admin.secret, twin)).toBe(8);
		// Kept again from its own batch: the next write waits for that batch alone.
		const next = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { counter: { value: 9 } }, conditions: { counter: "entry_value == 8" } },
		});
		expect(next.status).toBe(200);
		expect(d1Cost(next, "calls")).toBe(1);
	});

	it("time a value after the one it replaces, even when the clock stands behind the ledger's times", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { level: { value: 1, history: "INF" } });
		// As a restarted object may find it: the ledger's latest time ahead of the clock.
		const ahead = Math.round(Date.now() + 60_000) / 1000;
		await dbOf(admin.account)
			.prepare("UPDATE ledger_entries SET value_changed_ts = ?, entry_updated_ts = ? WHERE twin = ? AND name = 'level'")
			.bind(ahead, ahead, twin)
			.run();
		await dbOf(admin.account)
			.prepare("UPDATE ledger_history SET ts = ? WHERE twin = ? AND name = 'level'")
			.bind(ahead, twin)
			.run();
		const res = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { level: { value: 2 } } },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		expect(res.body.entries.level.value_changed_ts).toBeGreaterThan(ahead);
		const history = await call("GET", ledger(twin, "personal", "/history"), { secret: admin.secret });
		expect(Object.values(history.body.entries.level)).toEqual([2, 1]);
	});

	it("refuse a secret deleted, and see a twin changed, past the account's object", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { counter: { value: 0 } });
		const write = (value: number) =>
			call("PATCH", ledger(twin, "personal", "/value"), {
				secret: admin.secret,
				body: { entries: { counter: { value } } },
			});
		expect((await write(1)).status).toBe(200);
		const db = dbOf(admin.account);
		// A twin whose owner is another account is not the admin's to see (its role has no twin rule).
		await db
			.prepare("UPDATE twins SET owner = ?, version = version + 1 WHERE uuid = ?")
			.bind(crypto.randomUUID(), twin)
			.run();
		expectError(await write(2), 404, 404102);
		await db
			.prepare("UPDATE twins SET owner = ?, version = version + 1 WHERE uuid = ?")
			.bind(admin.account, twin)
			.run();
		expect((await write(3)).status).toBe(200);
		await db.prepare("DELETE FROM user_secrets WHERE account = ?").bind(admin.account).run();
		expect((await write(4)).status).toBe(401);
		expect(
			await dbOf(admin.account).prepare("SELECT value FROM ledger_entries WHERE twin = ?").bind(twin).first("value"),
		).toBe("3");
	});

	it("give each of many concurrent writes its own answer and one round trip", async () => {
		const admin = await bootstrap();
		const twins = await Promise.all(Array.from({ length: 16 }, () => newTwin(admin.secret)));
		for (const twin of twins) await addEntries(admin.secret, twin, { counter: { value: 0 } });
		const answers = await Promise.all(
			twins.map((twin, i) =>
				call("PATCH", ledger(twin, "personal", "/value"), {
					secret: admin.secret,
					body: { entries: { counter: { value: i + 1 } } },
				}),
			),
		);
		answers.forEach((res, i) => {
			expect(res.status).toBe(200);
			expect(res.body.entries.counter.value).toBe(i + 1);
			expect(d1Cost(res, "calls")).toBe(1);
		});
		for (const [i, twin] of twins.entries()) expect(await counterOf(admin.secret, twin)).toBe(i + 1);
	});

	it("answer a batch that keeps failing with 500, once, and write again once it no longer fails", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { counter: { value: 0 } });
		const db = dbOf(admin.account);
		const write = (value: number) =>
			call("PATCH", ledger(twin, "personal", "/value"), {
				secret: admin.secret,
				body: { entries: { counter: { value } } },
			});
		// Without the guards' table every batch of a ledger write fails, however often it is run again.
		const logged = loggedErrors();
		await db.prepare("ALTER TABLE write_guards RENAME TO write_guards_away").run();
		try {
			const failed = await Promise.all([write(1), write(2), write(3)]);
			for (const res of failed) expectError(res, 500, 500101);
			expect(String(logged.mock.calls[0]?.[0])).toContain("write_guards");
		} finally {
			await db.prepare("ALTER TABLE write_guards_away RENAME TO write_guards").run();
		}
		expect((await write(4)).status).toBe(200);
		expect(await counterOf(admin.secret, twin)).toBe(4);
	});

	it("land every one of many large concurrent writes, whatever number of batches they take", async () => {
		const admin = await bootstrap();
		const twins = await Promise.all(Array.from({ length: 12 }, () => newTwin(admin.secret)));
		// 40 entries with history each: three statements an entry, far more than one batch takes.
		const entries = (round: number) =>
			Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`e${i}`, { value: round * 100 + i, history: "1D" }]));
		const answers = await Promise.all(
			twins.map((twin) => call("POST", ledger(twin), { secret: admin.secret, body: { entries: entries(1) } })),
		);
		for (const res of answers) expect(res.status, JSON.stringify(res.body)).toBe(201);
		for (const twin of twins) {
			const stored = (await call("GET", ledger(twin, "personal", "/value"), { secret: admin.secret })).body.entries;
			expect(Object.keys(stored)).toHaveLength(40);
			expect(stored.e39.value).toBe(139);
		}
	});
});

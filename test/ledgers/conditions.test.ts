import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";

// About 3,000 instructions of program over 60,000 characters: far more than one request may do.
const COSTLY = "entry_value !~ '(?:[ab][ab]?){999}[cd]'";

describe("conditions on ledger writes", () => {
	it("writes nothing when a condition is false, and names every false one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const { a } = await addEntries(admin.secret, twin, { a: { value: 1 }, b: { value: "x" } });
		const body = {
			entries: { a: { value: 2 }, b: { value: "y" } },
			conditions: { a: "entry_value == 5", b: "entry_value == 'x'", missing: "entry_value != null" },
		};
		const res = await call("PATCH", ledger(twin), { secret: admin.secret, body });
		expectError(res, 409, 409102);
		expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
			"conditions.a",
			"conditions.missing",
		]);
		const now = (await call("GET", ledger(twin, "personal", "/value"), { secret: admin.secret })).body.entries;
		expect([now.a.value, now.b.value]).toEqual([1, "x"]);

		// The names of the pyi examples: timestamps, other entries, the ledger and the writer.
		const ok = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: {
				entries: { a: { value: 3 } },
				conditions: {
					a: `value_changed_ts == ${a.value_changed_ts} and LEDGER.b == 'x' and ledger == account and entry_name == 'a'`,
					lock: "entry_value == null and entry_created_ts == null",
				},
			},
		});
		expect(ok.status, JSON.stringify(ok.body)).toBe(200);
		expect(ok.body.entries.a.value).toBe(3);
	});

	it("guards adds and deletes too", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { lock: { value: "held" } });
		const add = await call("POST", ledger(twin), {
			secret: admin.secret,
			body: { entries: { job: { value: 1 } }, conditions: { lock: "entry_value == 'free'" } },
		});
		expectError(add, 409, 409102);
		const del = await call("DELETE", ledger(twin), {
			secret: admin.secret,
			body: { conditions: { lock: "entry_value == 'free'" } },
		});
		expectError(del, 409, 409102);
		expect(Object.keys((await call("GET", ledger(twin), { secret: admin.secret })).body.entries)).toEqual(["lock"]);
		const freed = await call("DELETE", ledger(twin, "personal", "?entries=lock"), {
			secret: admin.secret,
			body: { conditions: { lock: "entry_value == 'held'" } },
		});
		expect(freed.status).toBe(200);
	});

	it("lets exactly one of 50 concurrent conditional updates win, round after round", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { counter: { value: { n: 0, by: null }, history: "INF" } });
		const rounds = 4;
		for (let round = 0; round < rounds; round++) {
			const answers = await Promise.all(
				Array.from({ length: 50 }, (_, i) =>
					call("PATCH", ledger(twin, "personal", "/value"), {
						secret: admin.secret,
						body: {
							entries: { counter: { value: { n: round + 1, by: i } } },
							conditions: { counter: `entry_value.n == ${round}` },
						},
					}),
				),
			);
			const winners = answers.flatMap((res, i) => (res.status === 200 ? [i] : []));
			expect(winners).toHaveLength(1);
			for (const res of answers) if (res.status !== 200) expectError(res, 409, 409102);
			const value = (await call("GET", ledger(twin, "personal", "/value"), { secret: admin.secret })).body.entries
				.counter.value;
			expect(value).toEqual({ n: round + 1, by: winners[0] });
		}
		const history = await call("GET", ledger(twin, "personal", "/history?entries=counter"), { secret: admin.secret });
		const values = Object.entries(history.body.entries.counter).sort(([a], [b]) => Number(b) - Number(a));
		expect(values.map(([, v]) => (v as { n: number }).n)).toEqual([4, 3, 2, 1, 0].slice(0, rounds + 1));
	});

	it("refuses, naming the rule, a write whose rules need more work than one request may do", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { big: { value: "ab".repeat(30_000) } });
		const guarded = await call("POST", ledger(twin), {
			secret: admin.secret,
			body: { entries: { small: { value: 1 } }, conditions: { big: COSTLY } },
		});
		expectError(guarded, 400, 400101);
		expect(guarded.body.details).toEqual([{ path: "conditions.big", message: expect.stringContaining("more work") }]);

		// The writer's role decides which entries it may write: its rule is charged too.
		const writer = await userWithRules(admin, { entry: COSTLY });
		const update = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: writer.secret,
			body: { entries: { big: { value: 1 } } },
		});
		expectError(update, 400, 400101);
		expect(update.body.details).toEqual([{ path: "entries.big", message: expect.stringContaining("more work") }]);
		expect(Object.keys((await call("GET", ledger(twin), { secret: admin.secret })).body.entries)).toEqual(["big"]);
	});
});

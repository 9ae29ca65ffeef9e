import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError, fingerprint } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";

// Account A keeps entries on its twin; account B sees the twin only through its role's twin
// rule, and A's entries only through its role's entry rule and each entry's visibility.
async function world() {
	const a = await bootstrap();
	const b = await bootstrap();
	const twin = await newTwin(a.secret, { shared: true });
	await addEntries(a.secret, twin, {
		note: { value: "private" },
		status: { value: "ok", visibility: "true", history: "INF" },
		gated: { value: 7, visibility: "USER.clearance == 'high'" },
		never: { value: 0, visibility: "false" },
		price: { value: 10, visibility: "LEDGER.published == true and ledger == owner" },
		published: { value: true },
	});
	return { a, b, twin };
}

const names = (res: { body: { entries: Record<string, unknown> } }) => Object.keys(res.body.entries).sort();

describe("who sees which ledger entries", () => {
	it("shows another account public entries whose visibility holds for the reader, in the reduced shape", async () => {
		const { a, b, twin } = await world();
		expectError(await call("GET", ledger(twin, a.account), { secret: b.secret }), 404, 404102);

		const low = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" }, { clearance: "low" });
		const high = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" }, { clearance: "high" });
		const lowRead = await call("GET", ledger(twin, a.account), { secret: low.secret });
		expect(names(lowRead)).toEqual(["price", "status"]);
		expect(lowRead.body.entries.status).toEqual({
			value: "ok",
			entry_created_ts: expect.any(Number),
			entry_updated_ts: expect.any(Number),
			value_changed_ts: expect.any(Number),
		});
		expect(names(await call("GET", ledger(twin, "owner"), { secret: high.secret }))).toEqual([
			"gated",
			"price",
			"status",
		]);
		expect(names(await call("GET", ledger(twin, "creator", "/value"), { secret: high.secret }))).toEqual([
			"gated",
			"price",
			"status",
		]);

		// The reader's own ledger on that twin is empty, and another account's is too.
		expect((await call("GET", ledger(twin), { secret: high.secret })).body).toEqual({ entries: {} });
		expect((await call("GET", ledger(twin, crypto.randomUUID()), { secret: high.secret })).body).toEqual({
			entries: {},
		});
	});

	it("shows nothing of other accounts to a role whose entry rule is null, and filters by the entry rule", async () => {
		const { a, b, twin } = await world();
		const noRule = await userWithRules(b, { twin: "TWIN.shared == true" });
		expect((await call("GET", ledger(twin, a.account), { secret: noRule.secret })).body).toEqual({ entries: {} });

		const some = await userWithRules(b, { twin: "TWIN.shared == true", entry: "entry_name != 'status'" });
		expect(names(await call("GET", ledger(twin, a.account), { secret: some.secret }))).toEqual(["price"]);

		// The owner's own users: the entry rule alone decides, private entries included.
		const own = await userWithRules(a, { entry: "entry_name in ['note', 'status']" });
		const mine = await call("GET", ledger(twin), { secret: own.secret });
		expect(names(mine)).toEqual(["note", "status"]);
		expect(mine.body.entries.note).toMatchObject({ value: "private", visibility: null });
		expectError(
			await call("PATCH", ledger(twin), { secret: own.secret, body: { entries: { gated: { value: 1 } } } }),
			404,
			404102,
		);
		expect(names(await call("DELETE", ledger(twin), { secret: own.secret }))).toEqual(["note", "status"]);
		expect(names(await call("GET", ledger(twin), { secret: a.secret }))).toEqual([
			"gated",
			"never",
			"price",
			"published",
		]);
	});

	it("answers a hidden entry exactly as an absent one, cost included", async () => {
		const { a, b, twin } = await world();
		const reader = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" }, { clearance: "low" });
		for (const tail of ["", "/value"]) {
			const hidden = await call("GET", ledger(twin, a.account, `${tail}?entries=note,never,gated`), {
				secret: reader.secret,
			});
			const absent = await call("GET", ledger(twin, a.account, `${tail}?entries=nope,nada,zip`), {
				secret: reader.secret,
			});
			expect(hidden.body).toEqual({ entries: {} });
			expect(absent.body).toEqual(hidden.body);
			for (const figure of ["queries", "rows_read", "rows_written"] as const)
				expect(d1Cost(hidden, figure)).toBe(d1Cost(absent, figure));
		}
		const history = await call("GET", ledger(twin, a.account, "/history?entries=note,nope,status"), {
			secret: reader.secret,
		});
		expect(history.body.entries.note).toBe("Entry not accessible.");
		expect(history.body.entries.nope).toBe("Entry not accessible.");
		expect(Object.values(history.body.entries.status)).toEqual(["ok"]);
	});

	// rows_read counts no entry the reader cannot see, next to a visible one (each
	// hidden row is taken out exactly) or alone (a ledger of hidden entries costs an empty one).
	it("costs, on every read, the same with or without entries the reader cannot see", async () => {
		for (const alongside of [false, true]) {
			const a = await bootstrap();
			const b = await bootstrap();
			const twin = await newTwin(a.secret, { shared: true });
			if (alongside) await addEntries(a.secret, twin, { open: { value: 1, visibility: "true", history: "INF" } });
			const reader = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" }, { clearance: "low" });
			const own = await userWithRules(a, { entry: "entry_name == 'open'" });
			const reads = (which: string) =>
				["", "/value", "/history?entries=open,hidden"].map((tail) => ledger(twin, which, tail));
			const look = async () => {
				const answers = [];
				for (const [secret, which] of [
					[reader.secret, a.account],
					[own.secret, "personal"],
				]) {
					for (const path of reads(which)) answers.push(fingerprint(await call("GET", path, { secret })));
				}
				return answers;
			};
			const before = await look();
			const gated = { value: 7, visibility: "USER.clearance == 'high'" };
			await addEntries(a.secret, twin, { hidden: { value: "secret", history: "INF" }, gated });
			expect(await look()).toEqual(before);
		}
	});

	it("gives rules written on the reader's side no view of entries the reader cannot see", async () => {
		const { a, b, twin } = await world();
		// A role rule probing a private value: LEDGER.note reads null on another account's ledger.
		const probe = await userWithRules(b, { twin: "TWIN.shared == true", entry: "LEDGER.note == 'private'" });
		expect((await call("GET", ledger(twin, a.account), { secret: probe.secret })).body).toEqual({ entries: {} });
		const blind = await userWithRules(b, {
			twin: "TWIN.shared == true",
			entry: "LEDGER.note == null and LEDGER.status == 'ok'",
		});
		expect(names(await call("GET", ledger(twin, a.account), { secret: blind.secret }))).toEqual(["price", "status"]);

		// A writer's conditions read an entry its role hides as absent.
		const narrow = await userWithRules(a, { entry: "entry_name == 'status'" });
		const write = (conditions: Record<string, string>) =>
			call("PATCH", ledger(twin, "personal", "/value"), {
				secret: narrow.secret,
				body: { entries: { status: { value: "checked" } }, conditions },
			});
		expectError(await write({ note: "entry_value == 'private'" }), 409, 409102);
		expectError(await write({ status: "LEDGER.note != null" }), 409, 409102);
		expect(
			(await write({ note: "entry_value == null and entry_created_ts == null", status: "LEDGER.note == null" })).status,
		).toBe(200);
	});

	it("lets no writer confined by an entry rule write a visibility or publish rule that reads LEDGER", async () => {
		const { a, b, twin } = await world();
		// The writer sees status, not note: a visibility rule over LEDGER.note would show another
		// account's readers whether note holds "private", a publish rule would tell a topic's
		// subscribers; both are refused whatever the ledger holds.
		const narrow = await userWithRules(a, { entry: "entry_name == 'status'" });
		const patch = (entries: Record<string, unknown>) =>
			call("PATCH", ledger(twin), { secret: narrow.secret, body: { entries } });
		const probes = [
			{ visibility: "LEDGER.note == 'private'" },
			{ publish: { leaks: "LEDGER.note == 'private'" } },
			{ visibility: "true", publish: { fine: "true", leaks: "LEDGER.status != null" } },
		];
		for (const change of probes) {
			const res = await patch({ status: change });
			expectError(res, 403, 403102);
			expect(res.body.details).toEqual([{ path: "entries.status", message: expect.stringContaining("LEDGER") }]);
		}
		expectError(
			await call("POST", ledger(twin), {
				secret: narrow.secret,
				body: { entries: { status2: { value: 1, visibility: "LEDGER.note != null" } } },
			}),
			403,
			403102,
		);
		// Rules that do not read LEDGER pass, and a writer with no entry rule writes any.
		expect(
			(await patch({ status: { visibility: "USER.clearance == 'high'", publish: { fine: "entry_value != null" } } }))
				.status,
		).toBe(200);
		expect(
			(
				await call("PATCH", ledger(twin), {
					secret: a.secret,
					body: { entries: { status: { visibility: "LEDGER.note == 'private'" } } },
				})
			).status,
		).toBe(200);
		const reader = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" });
		expect(names(await call("GET", ledger(twin, a.account), { secret: reader.secret }))).toContain("status");
	});

	it("lets another account keep its own ledger on a twin it sees, which the owner sees only by its rules", async () => {
		const { a, b, twin } = await world();
		const writer = await userWithRules(b, { twin: "TWIN.shared == true" });
		await addEntries(writer.secret, twin, { remark: { value: "from b", visibility: "true" }, internal: { value: 1 } });
		expectError(
			await call("POST", ledger(twin, a.account), { secret: writer.secret, body: { entries: { x: { value: 1 } } } }),
			403,
			403103,
		);
		expect((await call("GET", ledger(twin, b.account), { secret: a.secret })).body).toEqual({ entries: {} });
		const curious = await userWithRules(a, { entry: "true" });
		expect(names(await call("GET", ledger(twin, b.account), { secret: curious.secret }))).toEqual(["remark"]);
		expect(names(await call("GET", ledger(twin), { secret: curious.secret }))).toEqual([
			"gated",
			"never",
			"note",
			"price",
			"published",
			"status",
		]);
	});

	it("hides from a read an entry whose visibility needs more work than one request may do, and only that one", async () => {
		const a = await bootstrap();
		const twin = await newTwin(a.secret, { shared: true });
		await addEntries(a.secret, twin, {
			big: { value: "ab".repeat(30_000), visibility: "entry_value !~ '(?:[ab][ab]?){999}[cd]'" },
			small: { value: 1, visibility: "true" },
		});
		const reader = await userWithRules(await bootstrap(), { twin: "TWIN.shared == true", entry: "true" });
		const read = await call("GET", ledger(twin, a.account), { secret: reader.secret });
		expect(read.status).toBe(200);
		expect(names(read)).toEqual(["small"]);
	});
});

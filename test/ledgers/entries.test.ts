import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWith } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { clockPast } from "../support/waiting";
import { dbOf } from "../support/shards";

describe("ledger entries of the caller's own ledger", () => {
	it("adds, reads, updates and deletes entries with their timestamps", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const added = await addEntries(admin.secret, twin, {
			temperature: {
				value: { c: 21.5 },
				visibility: "true",
				history: "1D",
				publish: { "temp-events": "entry_value.c > 30" },
			},
			serial: { value: "A-17" },
		});
		const t = added.serial.entry_created_ts;
		expect(added).toEqual({
			temperature: {
				value: { c: 21.5 },
				visibility: "true",
				history: "1D",
				publish: { "temp-events": "entry_value.c > 30" },
				entry_created_ts: expect.any(Number),
				entry_updated_ts: expect.any(Number),
				value_changed_ts: expect.any(Number),
			},
			serial: { value: "A-17", visibility: null, entry_created_ts: t, entry_updated_ts: t, value_changed_ts: t },
		});

		const read = await call("GET", ledger(twin), { secret: admin.secret });
		expect(read.status).toBe(200);
		expect(read.body.entries).toEqual(added);
		expect(
			(await call("GET", ledger(twin, admin.account, "?entries=serial,nothing"), { secret: admin.secret })).body,
		).toEqual({
			entries: { serial: added.serial },
		});
		expect(
			(await call("GET", ledger(twin, "personal", "/value?entries=serial"), { secret: admin.secret })).body,
		).toEqual({
			entries: { serial: { value: "A-17", entry_created_ts: t, entry_updated_ts: t, value_changed_ts: t } },
		});

		const updated = await call("PATCH", ledger(twin), {
			secret: admin.secret,
			body: { entries: { serial: { visibility: "true" } } },
		});
		expect(updated.status).toBe(200);
		expect(updated.body.entries.serial).toMatchObject({ value: "A-17", visibility: "true", value_changed_ts: t });
		expect(updated.body.entries.serial.entry_updated_ts).toBeGreaterThanOrEqual(t);

		const valued = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { serial: { value: "B-2" } } },
		});
		expect(valued.body.entries.serial).toMatchObject({ value: "B-2", visibility: "true" });

		const deleted = await call("DELETE", ledger(twin, "personal", "?entries=serial,absent"), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(Object.keys(deleted.body.entries)).toEqual(["serial"]);
		expect(deleted.body.entries.serial.value).toBe("B-2");
		const rest = await call("DELETE", ledger(twin), { secret: admin.secret });
		expect(Object.keys(rest.body.entries)).toEqual(["temperature"]);
		expect((await call("GET", ledger(twin), { secret: admin.secret })).body).toEqual({ entries: {} });
	});

	it("filters the own ledger by public and private", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { open: { value: 1, visibility: "true" }, closed: { value: 2 } });
		const names = async (query: string) =>
			Object.keys((await call("GET", ledger(twin, "personal", query), { secret: admin.secret })).body.entries).sort();
		expect(await names("")).toEqual(["closed", "open"]);
		expect(await names("?show_private=false")).toEqual(["open"]);
		expect(await names("?show_public=0&show_references=true")).toEqual(["closed"]);
	});

	it("refuses an entry that exists, and updates of unknown entries, writing nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 } });
		const again = await call("POST", ledger(twin), {
			secret: admin.secret,
			body: { entries: { b: { value: 2 }, a: { value: 3 } } },
		});
		expectError(again, 409, 409101);
		expect(again.body.details).toEqual([{ path: "entries.a", message: expect.any(String) }]);
		const unknown = await call("PATCH", ledger(twin), {
			secret: admin.secret,
			body: { entries: { a: { value: 5 }, z: { value: 2 } } },
		});
		expectError(unknown, 404, 404102);
		expectError(
			await call("PATCH", ledger(twin, "personal", "/value"), {
				secret: admin.secret,
				body: { entries: { z: { value: 2 } } },
			}),
			404,
			404102,
		);
		expect((await call("GET", ledger(twin), { secret: admin.secret })).body.entries).toEqual({
			a: expect.objectContaining({ value: 1 }),
		});
	});

	it("changes nothing when the value is deep-equal to the stored one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const before = (
			await addEntries(admin.secret, twin, { doc: { value: { a: [1, { b: null }], c: "x" }, history: "INF" } })
		).doc;
		// A change now would have later times.
		await clockPast(before.entry_updated_ts);
		const same = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { doc: { value: { c: "x", a: [1, { b: null }] } } } },
		});
		expect(same.status).toBe(200);
		expect(same.body.entries.doc).toEqual(before);
		const history = await call("GET", ledger(twin, "personal", "/history?entries=doc"), { secret: admin.secret });
		expect(Object.keys(history.body.entries.doc)).toHaveLength(1);
	});

	it("answers not supported for references, includes and transactions", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const body of [
			{ entries: { a: { value: 1, ref: { source: "x" } } } },
			{ entries: { a: { value: 1, include: {} } } },
			{ entries: { a: { value: 1 } }, transaction: "tx-1" },
		]) {
			const res = await call("POST", ledger(twin), { secret: admin.secret, body });
			expectError(res, 400, 400101);
			expect(res.body.details[0].message).toBe("not supported");
		}
		expect(
			(
				await call("POST", ledger(twin), {
					secret: admin.secret,
					body: { entries: { a: { value: 1 } }, transaction: null },
				})
			).status,
		).toBe(201);
	});

	it.each([
		["a bad entry name", { entries: { "Bad-Name": { value: 1 } } }],
		["no value", { entries: { a: { visibility: null } } }],
		["no entries", { entries: {} }],
		["a malformed visibility rule", { entries: { a: { value: 1, visibility: "((" } } }],
		["a bad history period", { entries: { a: { value: 1, history: "0D" } } }],
		["a bad topic", { entries: { a: { value: 1, publish: { "no spaces": "true" } } } }],
		[
			"eleven topics",
			{
				entries: { a: { value: 1, publish: Object.fromEntries([...Array(11)].map((_, i) => [`topic-${i}`, "true"])) } },
			},
		],
		["a malformed publish rule", { entries: { a: { value: 1, publish: { topic: "a ==" } } } }],
		["a malformed condition", { entries: { a: { value: 1 } }, conditions: { a: "==" } }],
	])("answers 400 for %s", async (_case, body) => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		expectError(await call("POST", ledger(twin), { secret: admin.secret, body }), 400, 400101);
	});

	it("answers 400 for bad ledgers and query lists", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		expectError(await call("GET", ledger(twin, "everyone"), { secret: admin.secret }), 400, 400101);
		expectError(
			await call("GET", ledger(twin, "personal", `?entries=${[...Array(101)].map((_, i) => `e${i}`).join(",")}`), {
				secret: admin.secret,
			}),
			400,
			400101,
		);
		expectError(await call("GET", ledger(twin, "personal", "?entries=A"), { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", ledger(twin, "personal", "?unknown=1"), { secret: admin.secret }), 400, 400101);
	});

	it("writes only the caller's own ledger, on twins it sees, alive or terminated", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const which of [other.account, "owner", "creator"]) {
			expectError(
				await call("POST", ledger(twin, which), { secret: admin.secret, body: { entries: { a: { value: 1 } } } }),
				403,
				403103,
			);
			expectError(
				await call("PATCH", ledger(twin, which, "/value"), {
					secret: admin.secret,
					body: { entries: { a: { value: 1 } } },
				}),
				403,
				403103,
			);
			expectError(await call("DELETE", ledger(twin, which), { secret: admin.secret }), 403, 403103);
		}
		expectError(
			await call("POST", ledger(twin), { secret: other.secret, body: { entries: { a: { value: 1 } } } }),
			404,
			404102,
		);
		expectError(await call("GET", ledger(twin), { secret: other.secret }), 404, 404102);

		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		await addEntries(admin.secret, twin, { after_end: { value: true } });
		expect(
			(
				await call("PATCH", ledger(twin, admin.account), {
					secret: admin.secret,
					body: { entries: { after_end: { value: false } } },
				})
			).status,
		).toBe(200);
		expect((await call("GET", ledger(twin, "owner"), { secret: admin.secret })).body.entries.after_end.value).toBe(
			false,
		);
	});

	it("deletes a ledger of thousands of small entries in one call", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const db = dbOf(admin.account);
		const insert = db.prepare(
			`INSERT INTO ledger_entries (twin, account, name, value, size, entry_created_ts, entry_updated_ts, value_changed_ts)
			VALUES (?, ?, ?, '0', ?, 1, 1, 1)`,
		);
		const names = Array.from({ length: 3000 }, (_, i) => `e${i}`);
		for (let i = 0; i < names.length; i += 500) {
			await db.batch(names.slice(i, i + 500).map((name) => insert.bind(twin, admin.account, name, name.length + 4)));
		}
		const deleted = await call("DELETE", ledger(twin), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(Object.keys(deleted.body.entries)).toHaveLength(3000);
		expect(await db.prepare("SELECT count(*) AS n FROM ledger_entries WHERE twin = ?").bind(twin).first("n")).toBe(0);
	});

	it("names the operations in role statements", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 } });
		const role = await call("POST", "/roles", {
			secret: admin.secret,
			body: {
				name: "Ledger reader",
				statement: { effect: "allow", actions: ["get_twin", "get_twin_ledger_entry", "get_twin_ledger_entry_history"] },
			},
		});
		expect(role.status).toBe(201);
		const reader = await userWith(admin, { effect: "allow", actions: ["get_twin", "get_twin_ledger_entry"] });
		expect((await call("GET", ledger(twin), { secret: reader.secret })).body.entries.a.value).toBe(1);
		expectError(await call("GET", ledger(twin, "personal", "/value"), { secret: reader.secret }), 403, 403101);
		expectError(
			await call("POST", ledger(twin), { secret: reader.secret, body: { entries: { b: { value: 1 } } } }),
			403,
			403101,
		);
	});

	it("keeps each account's ledger apart in storage", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 1 } });
		const { results } = await dbOf(twin)
			.prepare("SELECT account, name, value, size FROM ledger_entries WHERE twin = ?")
			.bind(twin)
			.all();
		expect(results).toEqual([{ account: admin.account, name: "a", value: "1", size: 5 }]);
	});
});

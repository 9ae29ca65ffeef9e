import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { confirmedSubscription, outboxOf } from "../support/webhooks";

// "__proto__" from JSON.parse is an own key, but any object rebuilt from it by assignment
// loses it. Such a key, anywhere in a body or in a list of entry names, is refused (400101)
// and nothing is written; every other key the patterns allow comes back as it was sent.

const RESERVED = '"__proto__" is a reserved key';

function expectReserved(res: Awaited<ReturnType<typeof call>>, path: string) {
	expectError(res, 400, 400101);
	expect(res.body.details).toEqual([{ path, message: RESERVED }]);
	expect(res.body.description).toBe(`${path}: ${RESERVED}`);
}

// A history's values, newest first (its keys are timestamps).
const newestFirst = (records: Record<string, unknown>) =>
	Object.entries(records)
		.sort(([a], [b]) => Number(b) - Number(a))
		.map(([, v]) => v);

async function ledgerOf(secret: string, twin: string) {
	const res = await call("GET", ledger(twin), { secret });
	expect(res.status).toBe(200);
	return res.body.entries;
}

describe("a __proto__ key in a ledger write", () => {
	it("is refused as an entry name, a condition, a publish topic or a key of a value, and nothing is written", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { kept: { value: 1 } });
		const before = await ledgerOf(admin.secret, twin);

		// Bodies are sent as text: in a JavaScript literal, "__proto__" would set the prototype.
		const cases: [string, string, string, string][] = [
			["POST", "", '{"entries":{"__proto__":{"value":1},"fresh":{"value":2}}}', "entries.__proto__"],
			["PATCH", "", '{"entries":{"__proto__":{"value":1}}}', "entries.__proto__"],
			["PATCH", "/value", '{"entries":{"kept":{"value":2},"__proto__":{"value":1}}}', "entries.__proto__"],
			// A false condition that zod would drop, letting the write through.
			["POST", "", '{"entries":{"fresh":{"value":2}},"conditions":{"__proto__":"false"}}', "conditions.__proto__"],
			[
				"PATCH",
				"/value",
				'{"entries":{"kept":{"value":2}},"conditions":{"__proto__":"false"}}',
				"conditions.__proto__",
			],
			["DELETE", "?entries=kept", '{"conditions":{"__proto__":"false"}}', "conditions.__proto__"],
			// Not a topic the pattern allows, which zod would never have checked.
			[
				"POST",
				"",
				'{"entries":{"fresh":{"value":2,"publish":{"__proto__":"true"}}}}',
				"entries.fresh.publish.__proto__",
			],
			[
				"PATCH",
				"",
				'{"entries":{"kept":{"publish":{"ok-topic":"true","__proto__":"true"}}}}',
				"entries.kept.publish.__proto__",
			],
			[
				"POST",
				"",
				'{"entries":{"fresh":{"value":{"a":[1,{"b":{"__proto__":{"c":1}}}]}}}}',
				"entries.fresh.value.a.1.b.__proto__",
			],
			["PATCH", "/value", '{"entries":{"kept":{"value":{"__proto__":2}}}}', "entries.kept.value.__proto__"],
			["POST", "", '{"__proto__":{},"entries":{"fresh":{"value":2}}}', "__proto__"],
		];
		for (const [method, tail, body, path] of cases) {
			const res = await call(method, ledger(twin, "personal", tail), { secret: admin.secret, body });
			expect([method, tail, body, res.body.details]).toEqual([method, tail, body, [{ path, message: RESERVED }]]);
			expectReserved(res, path);
		}
		expect(await ledgerOf(admin.secret, twin)).toEqual(before);
	});

	it("is refused in a list of entry names, on reads and on a delete", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { kept: { value: 1, history: "INF" } });
		const before = await ledgerOf(admin.secret, twin);
		for (const [method, tail] of [
			["GET", ""],
			["GET", "/value"],
			["GET", "/history"],
			["DELETE", ""],
		]) {
			expectReserved(
				await call(method, ledger(twin, "personal", `${tail}?entries=kept,__proto__`), { secret: admin.secret }),
				"entries.1",
			);
			expectReserved(
				await call(method, ledger(twin, "personal", `${tail}?entries=__proto__`), { secret: admin.secret }),
				"entries.0",
			);
			// As the name of a query parameter it is an unknown one, like any other.
			const named = await call(method, ledger(twin, "personal", `${tail}?__proto__=kept`), { secret: admin.secret });
			expectError(named, 400, 400101);
			expect(named.body.details).toEqual([{ path: "__proto__", message: "Unknown field" }]);
		}
		expect(await ledgerOf(admin.secret, twin)).toEqual(before);
	});
});

describe("a __proto__ key in a description", () => {
	it("is refused on create_twin and update_twin, and the twin is unchanged", async () => {
		const admin = await bootstrap();
		expectReserved(
			await call("POST", "/twins", { secret: admin.secret, body: '{"description":{"__proto__":1,"a":2}}' }),
			"description.__proto__",
		);
		const scan = await call("GET", "/twins", { secret: admin.secret });
		expect(scan.body.twins).toEqual([]);

		const twin = await newTwin(admin.secret, { a: { b: 1 } });
		const before = (await call("GET", `/twins/${twin}`, { secret: admin.secret })).body;
		for (const [body, path] of [
			['{"description":{"__proto__":{"x":1}}}', "description.__proto__"],
			['{"description":{"a":{"__proto__":{}}}}', "description.a.__proto__"],
			['{"description":{"a":[{"__proto__":null}]}}', "description.a.0.__proto__"],
		]) {
			expectReserved(await call("PATCH", `/twins/${twin}`, { secret: admin.secret, body }), path);
		}
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body).toEqual(before);
	});

	it("is refused on create_user and update_user, and nothing is written", async () => {
		const admin = await bootstrap();
		const create = `{"name":"x","role":"${admin.role}","description":{"__proto__":{"admin":true}}}`;
		expectReserved(await call("POST", "/users", { secret: admin.secret, body: create }), "description.__proto__");
		expect(Object.keys((await call("GET", "/users", { secret: admin.secret })).body.users)).toEqual([admin.user]);

		const update = '{"description":{"team":{"__proto__":{"admin":true}}}}';
		expectReserved(
			await call("PATCH", `/users/${admin.user}`, { secret: admin.secret, body: update }),
			"description.team.__proto__",
		);
		expect((await call("GET", `/users/${admin.user}`, { secret: admin.secret })).body.description).toEqual({});
	});
});

describe("keys that Object.prototype also has", () => {
	const value = { constructor: { toString: 1, valueOf: [{ hasOwnProperty: null }] }, isPrototypeOf: "x" };

	it("round-trip as entry names, condition keys, publish topics and keys of values", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const publish = { constructor: "true", toString: "true" };
		const added = await addEntries(admin.secret, twin, { constructor: { value, history: "INF", publish } });
		expect(Object.keys(added)).toEqual(["constructor"]);
		expect(added.constructor).toMatchObject({ value, publish });

		const read = await ledgerOf(admin.secret, twin);
		expect(Object.keys(read)).toEqual(["constructor"]);
		expect(read.constructor).toMatchObject({ value, publish, history: "INF" });
		const values = await call("GET", ledger(twin, "personal", "/value?entries=constructor"), { secret: admin.secret });
		expect(values.body.entries.constructor.value).toEqual(value);

		// A condition on it reads it: a false one refuses, a true one lets the write through.
		const refused = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { constructor: { value: 2 } }, conditions: { constructor: "entry_value == null" } },
		});
		expectError(refused, 409, 409102);
		const changed = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: {
				entries: { constructor: { value: 2 } },
				conditions: { constructor: "entry_value.constructor.toString == 1" },
			},
		});
		expect(changed.status, JSON.stringify(changed.body)).toBe(200);

		const history = await call("GET", ledger(twin, "personal", "/history?entries=constructor"), {
			secret: admin.secret,
		});
		expect(newestFirst(history.body.entries.constructor)).toEqual([2, value]);

		const deleted = await call("DELETE", ledger(twin, "personal", "?entries=constructor"), { secret: admin.secret });
		expect(Object.keys(deleted.body.entries)).toEqual(["constructor"]);
		expect(await ledgerOf(admin.secret, twin)).toEqual({});
	});

	it("round-trip as description keys and keys of description values", async () => {
		const admin = await bootstrap();
		const description = { constructor: value, tostring: 1 };
		const twin = await newTwin(admin.secret, description);
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual(description);
		const updated = await call("PATCH", `/twins/${twin}`, {
			secret: admin.secret,
			body: { description: { constructor: 2 } },
		});
		expect(updated.body.description).toEqual({ constructor: 2 });
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({
			constructor: 2,
		});

		const user = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "u", role: admin.role, description },
		});
		expect(user.status).toBe(201);
		expect((await call("GET", `/users/${user.body.uuid}`, { secret: admin.secret })).body.description).toEqual(
			description,
		);
	});

	it("publish to a topic named constructor or toString", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const subscriptions = [
			await confirmedSubscription(admin, "constructor", crypto.randomUUID()),
			await confirmedSubscription(admin, "toString", crypto.randomUUID()),
		];
		await addEntries(admin.secret, twin, { reading: { value: 1, publish: { constructor: "true", toString: "true" } } });
		for (const subscription of subscriptions) {
			const rows = await outboxOf(subscription.uuid);
			expect(rows).toHaveLength(1);
			expect(JSON.parse(rows[0].event as string)).toMatchObject({ reading: { new_value: 1, old_value: null } });
		}
	});

	it("are part of the ledger a publish rule reads after a delete", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const subscription = await confirmedSubscription(admin, "readings", crypto.randomUUID());
		await addEntries(admin.secret, twin, {
			constructor: { value: 1 },
			gone: { value: 2, publish: { readings: "LEDGER.constructor == 1" } },
		});
		expect(await outboxOf(subscription.uuid)).toHaveLength(1);
		const deleted = await call("DELETE", ledger(twin, "personal", "?entries=gone"), { secret: admin.secret });
		expect(Object.keys(deleted.body.entries)).toEqual(["gone"]);
		expect(await outboxOf(subscription.uuid)).toHaveLength(2);
	});

	it("keep their history on a later page", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		// A page reads at most 100 entries, in name order: "constructor" comes after these.
		const names = Array.from({ length: 100 }, (_, i) => `a${String(i).padStart(3, "0")}`);
		await addEntries(
			admin.secret,
			twin,
			Object.fromEntries(names.map((name) => [name, { value: name, history: "INF" }])),
		);
		await addEntries(admin.secret, twin, { constructor: { value: "last", history: "INF" } });
		const first = await call("GET", ledger(twin, "personal", "/history"), { secret: admin.secret });
		expect(first.status).toBe(200);
		// The first page names every entry that keeps history; its records come on the next.
		expect(Object.hasOwn(first.body.entries, "constructor")).toBe(true);
		expect(first.body.entries.constructor).toEqual({});
		expect(first.body.cursor).toEqual(expect.any(String));
		const next = await call(
			"GET",
			ledger(twin, "personal", `/history?cursor=${encodeURIComponent(first.body.cursor)}`),
			{ secret: admin.secret },
		);
		expect(next.status).toBe(200);
		expect(Object.values(next.body.entries.constructor)).toEqual(["last"]);
	});
});

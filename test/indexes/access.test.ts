import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, member, role, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, warmWriter } from "../support/ledgers";
import { until } from "../support/waiting";
import { createIndexes, INDEXES, indexDefinition, indexPath, indexRowsByTwin, indexTable } from "./helpers";

// Access to Indexes tables (docs/indexes.md, "Access"): the statement first (403101), then 403102
// for a role with an entry rule on every route, and for one with a twin rule on the four that
// define, before any validation or lookup; a table resolves only in its account, so another
// account's answers as an absent one. What a twin rule reads is in reader.test.ts.

const definition = indexDefinition("LEDGER.n != null", { n: ["integer", "{LEDGER[n]}"] });

type Route = { op: string; method: string; path: (name: string) => string; body?: unknown };

// The seven routes, each with a valid request on the table `name`.
const ROUTES: Route[] = [
	{ op: "create_indexes_table", method: "POST", path: () => INDEXES, body: { indexes: { fresh: definition } } },
	{ op: "get_indexes_tables", method: "GET", path: () => INDEXES },
	{ op: "get_indexes_table", method: "GET", path: (name) => indexPath(name) },
	{ op: "update_indexes_table", method: "PATCH", path: (name) => indexPath(name), body: { rule: "true" } },
	{ op: "delete_indexes_table", method: "DELETE", path: (name) => indexPath(name) },
	{ op: "truncate_indexes_table", method: "DELETE", path: (name) => indexPath(name, "/data") },
	{ op: "query_indexes_table", method: "GET", path: (name) => indexPath(name, "/data?count=5&match=ROW.n%20%3E%200") },
];

// The same routes with input each would refuse (400101), or on a name that is not there.
const BAD: Route[] = [
	{ op: "create_indexes_table", method: "POST", path: () => INDEXES, body: { indexes: {} } },
	{
		op: "create_indexes_table",
		method: "POST",
		path: () => INDEXES,
		body: { indexes: { t: { ...definition, rule: "now > 1" } } },
	},
	{ op: "get_indexes_tables", method: "GET", path: () => `${INDEXES}` },
	{ op: "get_indexes_table", method: "GET", path: () => indexPath("absent") },
	{ op: "get_indexes_table", method: "GET", path: () => indexPath("Bad-Name") },
	{ op: "update_indexes_table", method: "PATCH", path: (name) => indexPath(name), body: {} },
	{ op: "update_indexes_table", method: "PATCH", path: () => indexPath("absent"), body: { rule: 5 } },
	{ op: "delete_indexes_table", method: "DELETE", path: () => indexPath("absent") },
	{ op: "truncate_indexes_table", method: "DELETE", path: () => indexPath("Bad-Name", "/data") },
	{ op: "query_indexes_table", method: "GET", path: (name) => indexPath(name, "/data?count=0&match=ROW.n%20%3E") },
	{ op: "query_indexes_table", method: "GET", path: (name) => indexPath(name, "/data?cursor=forged&unknown=1") },
];

const send = (route: Route, secret: string, name = "t") =>
	call(route.method, route.path(name), { secret, body: route.body });

// An account with a table `t` holding one row.
async function withTable() {
	const admin = await bootstrap();
	await createIndexes(admin.secret, { t: definition });
	const twin = await newTwin(admin.secret);
	await addEntries(admin.secret, twin, { n: { value: 1 } });
	const record = await indexTable(admin.secret, "t");
	const unchanged = async () => {
		expect(await indexTable(admin.secret, "t")).toEqual(record);
		expect(Object.keys(await indexRowsByTwin(admin.secret, "t"))).toEqual([twin]);
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toEqual(["t"]);
	};
	return { admin, unchanged };
}

it("the route table covers the seven operations", () => {
	expect(new Set(ROUTES.map((r) => r.op)).size).toBe(7);
});

const DEFINING = new Set([
	"create_indexes_table",
	"update_indexes_table",
	"delete_indexes_table",
	"truncate_indexes_table",
]);

describe("roles that do not see the account's ledgers whole", () => {
	for (const [kind, rules] of [
		["entry", { entry: "true" }],
		["twin and entry", { twin: "owner == account", entry: "ledger == account" }],
	] as const) {
		it(`are refused with 403102 on all seven routes (a role with a ${kind} rule), whatever the input`, async () => {
			const { admin, unchanged } = await withTable();
			const reader = await userWithRules(admin, rules);
			for (const route of [...ROUTES, ...BAD]) {
				const res = await send(route, reader.secret);
				expectError(res, 403, 403102);
				expect(res.body.details, route.op).toBeUndefined();
			}
			await unchanged();
		});
	}

	it("with a twin rule only, are refused with 403102 on the four routes that define, whatever the input, and read on the three others", async () => {
		const { admin, unchanged } = await withTable();
		const reader = await userWithRules(admin, { twin: "true" });
		for (const route of [...ROUTES, ...BAD].filter((r) => DEFINING.has(r.op))) {
			const res = await send(route, reader.secret);
			expectError(res, 403, 403102);
			expect(res.body.details, route.op).toBeUndefined();
		}
		expect((await send(ROUTES[1], reader.secret)).status).toBe(200);
		expect((await send(ROUTES[2], reader.secret)).status).toBe(200);
		expect((await send(ROUTES[6], reader.secret)).body.rows).toHaveLength(1);
		await unchanged();
	});

	it("a role with an identity rule only is not refused", async () => {
		const { admin } = await withTable();
		const reader = await userWithRules(admin, { identity: "true" });
		expect((await send(ROUTES[1], reader.secret)).status).toBe(200);
		expect((await send(ROUTES[2], reader.secret)).status).toBe(200);
		expect((await send(ROUTES[6], reader.secret)).body.rows).toHaveLength(1);
		expect((await send(ROUTES[0], reader.secret)).status).toBe(201);
	});
});

describe("the statement", () => {
	it("comes first: 403101 for an operation it denies, before 403102 for the rules", async () => {
		const { admin, unchanged } = await withTable();
		for (const route of ROUTES) {
			const denying = await member(
				admin,
				await role(admin, { effect: "deny", actions: [route.op] }, { entry: "true" }, `No ${route.op}`),
			);
			expectError(await send(route, denying.secret), 403, 403101);
			for (const other of ROUTES.filter((r) => r.op !== route.op))
				expectError(await send(other, denying.secret), 403, 403102);
		}
		await unchanged();
	});

	it("names the seven operations: an allow list lets through only those it lists", async () => {
		const { admin } = await withTable();
		const lister = await member(
			admin,
			await role(admin, { effect: "allow", actions: ["get_indexes_tables", "query_indexes_table"] }, {}, "Lister"),
		);
		expect((await send(ROUTES[1], lister.secret)).status).toBe(200);
		expect((await send(ROUTES[6], lister.secret)).status).toBe(200);
		for (const route of [ROUTES[0], ROUTES[2], ROUTES[3], ROUTES[4], ROUTES[5]])
			expectError(await send(route, lister.secret), 403, 403101);
	});

	it("a `deny` role, the default included, allows all seven at once", async () => {
		const { admin } = await withTable();
		const someone = await member(admin, await role(admin, { effect: "deny", actions: null }, {}, "Default"));
		const expected = [201, 200, 200, 200, 200, 200, 200];
		for (const [i, route] of ROUTES.entries()) {
			// Delete last, so every route has the table.
			if (route.op === "delete_indexes_table") continue;
			expect((await send(route, someone.secret)).status, route.op).toBe(expected[i]);
		}
		expect((await send(ROUTES[4], someone.secret)).status).toBe(200);
	});

	it("refuses without a credential", async () => {
		for (const route of ROUTES)
			expectError(await call(route.method, route.path("t"), { body: route.body }), 401, 401101);
	});
});

describe("a table belongs to its account", () => {
	it("another account's table answers exactly as an absent name, on every route of a name", async () => {
		const { admin, unchanged } = await withTable();
		const other = await bootstrap();
		for (const route of ROUTES.slice(2)) {
			const theirs = await send(route, other.secret, "t");
			const absent = await send(route, other.secret, "u");
			expectError(theirs, 404, 404102);
			expect(fingerprint(theirs), route.op).toEqual(fingerprint(absent));
			expect(theirs.headers.get("server-timing")).toMatch(/rows_read=\d+/);
		}
		await unchanged();
		expect(admin.account).not.toBe(other.account);
	});

	it("names resolve per account: two accounts each have their own table of a name", async () => {
		const { admin } = await withTable();
		const other = await bootstrap();
		expect(
			(await createIndexes(other.secret, { t: indexDefinition("true", { twin: ["text", "{twin}"] }) })).t.status,
		).toBe("ready");
		expect(Object.keys((await call("GET", INDEXES, { secret: other.secret })).body.indexes)).toEqual(["t"]);
		expect((await indexTable(other.secret, "t")).rule).toBe("true");
		expect((await indexTable(admin.secret, "t")).rule).toBe(definition.rule);
		expect(await indexRowsByTwin(other.secret, "t")).toEqual({});
	});

	it("answers 404102 for a name outside the pattern", async () => {
		const { admin, unchanged } = await withTable();
		for (const name of ["Bad-Name", "T", "1t", "a".repeat(65), "t%20", "t.x"]) {
			for (const route of ROUTES.slice(2)) expectError(await send(route, admin.secret, name), 404, 404102);
		}
		await unchanged();
	});
});

// A writer whose entry rule hides an entry still keeps the account's rows current: rows come
// from the whole ledger. What that costs must not show in its answer, or Server-Timing would
// tell it whether its hidden entry passes a table's rule.
describe("a ledger write by a writer who cannot see the whole ledger", () => {
	it("keeps the rows current, and costs the same whatever its hidden entries make of them", async () => {
		const admin = await bootstrap();
		const [rich, poor] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await addEntries(admin.secret, rich, { salary: { value: 100 }, note: { value: "a" } });
		await addEntries(admin.secret, poor, { salary: { value: 10 }, note: { value: "a" } });
		await createIndexes(admin.secret, {
			earners: indexDefinition("LEDGER.salary > 50", { note: ["string", "{LEDGER[note]}"] }),
		});
		await until(
			() => indexTable(admin.secret, "earners"),
			(table) => table.status === "ready",
			"the build",
		);
		const narrow = await userWithRules(admin, { entry: "entry_name != 'salary'" });
		await warmWriter(narrow.secret, await newTwin(admin.secret));

		const write = (twin: string) =>
			call("PATCH", `/twins/${twin}/ledgers/personal/value`, {
				secret: narrow.secret,
				body: { entries: { note: { value: "b" } } },
			});
		const onRich = await write(rich);
		const onPoor = await write(poor);
		expect(onRich.status).toBe(200);
		const times = (text: string) => text.replace(/"(\w+_ts)":[\d.]+/g, '"$1":"ts"');
		expect(fingerprint(onRich, (text) => times(text.replaceAll(rich, poor)))).toEqual(fingerprint(onPoor, times));

		// The row of the twin whose hidden salary passes the rule changed with the write.
		const rows = await indexRowsByTwin(admin.secret, "earners");
		expect(Object.keys(rows)).toEqual([rich]);
		expect(rows[rich].properties).toEqual({ note: "b" });
	});
});

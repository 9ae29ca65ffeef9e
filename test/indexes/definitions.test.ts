import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries } from "../support/ledgers";
import { clockPast, until } from "../support/waiting";
import { objectEnv } from "../support/objects";
import { createIndexes, INDEXES, indexDefinition, indexPath, indexTable, queryIndex } from "./helpers";
import { dbOf } from "../support/shards";

// Definitions of Indexes tables (docs/indexes.md "Definitions", the create/get/update/delete
// routes): what a definition may say, the record's shape, the per-table texts of a create.

const simple = (rule = "LEDGER.a != null") => indexDefinition(rule, { a: ["integer", "{LEDGER[a]}"] });

const RECORD_KEYS = ["stats", "rule", "properties", "templates", "status", "created_ts", "updated_ts"];

// A timestamp as the contract writes them: seconds, at most 3 decimals, about now.
function expectTimestamp(value: unknown) {
	expect(typeof value).toBe("number");
	expect(Math.round((value as number) * 1000) / 1000).toBe(value);
	expect(Math.abs((value as number) - Date.now() / 1000)).toBeLessThan(120);
}

function expectRecord(record: any, definition: ReturnType<typeof simple>, status = "ready") {
	expect(Object.keys(record)).toEqual(RECORD_KEYS);
	expect(Object.keys(record.stats)).toEqual(["rows", "table_size"]);
	expect(record).toMatchObject({ ...definition, status });
	expectTimestamp(record.created_ts);
	expectTimestamp(record.updated_ts);
}

async function createRaw(secret: string, indexes: unknown) {
	return call("POST", INDEXES, { secret, body: { indexes } });
}

// A create refused as a whole: 400101 with one detail at `path` (message matching `message`
// when given), and no table made.
async function expectInvalid(indexes: Record<string, unknown>, path: string, message?: RegExp) {
	const admin = await bootstrap();
	const res = await createRaw(admin.secret, indexes);
	expectError(res, 400, 400101);
	const detail = res.body.details.find((d: { path: string }) => d.path === path);
	expect(detail, JSON.stringify(res.body.details)).toBeDefined();
	if (message) expect(detail.message).toMatch(message);
	expect((await call("GET", INDEXES, { secret: admin.secret })).body).toEqual({ indexes: {} });
	return res;
}

describe("create_indexes_table", () => {
	it("answers 201 with a record per table in request order, the records in the contract's key order", async () => {
		const admin = await bootstrap();
		const before = Date.now() / 1000;
		const tables = { zeta: simple("LEDGER.z == 1"), alpha: simple(), mid: simple("true") };
		const res = await createRaw(admin.secret, tables);
		expect(res.status).toBe(201);
		expect(Object.keys(res.body)).toEqual(["indexes"]);
		expect(Object.keys(res.body.indexes)).toEqual(["zeta", "alpha", "mid"]);
		for (const [name, definition] of Object.entries(tables)) {
			const record = res.body.indexes[name];
			expectRecord(record, definition);
			expect(record.stats).toEqual({ rows: 0, table_size: 0 });
			expect(record.created_ts).toBe(record.updated_ts);
			expect(record.created_ts).toBeGreaterThanOrEqual(Math.floor(before));
		}
	});

	it("lists the tables in name order, {} when there are none, and reads each one", async () => {
		const admin = await bootstrap();
		expect((await call("GET", INDEXES, { secret: admin.secret })).body).toEqual({ indexes: {} });
		const made = await createIndexes(admin.secret, { zeta: simple(), alpha: simple("true"), mid: simple("false") });
		const listed = await call("GET", INDEXES, { secret: admin.secret });
		expect(listed.status).toBe(200);
		expect(Object.keys(listed.body.indexes)).toEqual(["alpha", "mid", "zeta"]);
		for (const name of ["alpha", "mid", "zeta"]) {
			expect(listed.body.indexes[name]).toEqual(made[name]);
			expect(Object.keys(listed.body.indexes[name])).toEqual(RECORD_KEYS);
			const one = await indexTable(admin.secret, name);
			expect(one).toEqual(made[name]);
			expect(Object.keys(one)).toEqual(RECORD_KEYS);
		}
	});

	it("takes 1 to 10 tables in one request", async () => {
		const admin = await bootstrap();
		const ten = Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`t${i}`, simple()]));
		const eleven = { ...ten, t10: simple() };
		expectError(await createRaw(admin.secret, {}), 400, 400101);
		expectError(await createRaw(admin.secret, eleven), 400, 400101);
		expect((await call("GET", INDEXES, { secret: admin.secret })).body).toEqual({ indexes: {} });
		const made = await createIndexes(admin.secret, ten);
		expect(Object.keys(made)).toEqual(Object.keys(ten));
		for (const record of Object.values(made)) expect(record.status).toBe("ready");
	});

	it('answers "Table already exists." per table, and still makes the others', async () => {
		const admin = await bootstrap();
		const first = await createIndexes(admin.secret, { taken: simple() });
		const second = await createIndexes(admin.secret, { fresh: simple("true"), taken: simple("false") });
		expect(Object.keys(second)).toEqual(["fresh", "taken"]);
		expect(second.taken).toEqual({ error: "Table already exists." });
		expectRecord(second.fresh, simple("true"));
		// The table that was there is as it was.
		expect(await indexTable(admin.secret, "taken")).toEqual(first.taken);
	});

	it("answers 201 even when every table is an error", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { a: simple(), b: simple() });
		const res = await createRaw(admin.secret, { b: simple(), a: simple() });
		expect(res.status).toBe(201);
		expect(res.body).toEqual({
			indexes: { b: { error: "Table already exists." }, a: { error: "Table already exists." } },
		});
	});

	it('answers "Table limit reached." past MAX_INDEXES_TABLES, counting the tables the same request makes', async () => {
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_INDEXES_TABLES: "3" });
		await createIndexes(admin.secret, { a: simple() });
		const res = await createIndexes(admin.secret, { a: simple(), b: simple(), c: simple(), d: simple() });
		expect(Object.keys(res)).toEqual(["a", "b", "c", "d"]);
		expect(res.a).toEqual({ error: "Table already exists." });
		expect(res.b.status).toBe("ready");
		expect(res.c.status).toBe("ready");
		expect(res.d).toEqual({ error: "Table limit reached." });
		expect(await createIndexes(admin.secret, { e: simple() })).toEqual({ e: { error: "Table limit reached." } });
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toEqual(["a", "b", "c"]);
		// A deleted table frees its place.
		expect((await call("DELETE", indexPath("b"), { secret: admin.secret })).status).toBe(200);
		expect((await createIndexes(admin.secret, { e: simple() })).e.status).toBe("ready");
	});

	it("holds at 10 tables by default", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`t${i}`, simple()])));
		const res = await createIndexes(admin.secret, { last: simple(), over: simple() });
		expect(res.last.status).toBe("ready");
		expect(res.over).toEqual({ error: "Table limit reached." });
	});

	it("checks names and the limit one create at a time, so parallel creates cannot race past them", async () => {
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_INDEXES_TABLES: "3" });
		const answers = await Promise.all(
			Array.from({ length: 6 }, (_, i) => createIndexes(admin.secret, { [`t${i}`]: simple(), same: simple() })),
		);
		const all = answers.flatMap((answer) => Object.values(answer));
		expect(all.filter((a) => a.error === undefined)).toHaveLength(3);
		expect(answers.filter((answer) => answer.same.error === undefined)).toHaveLength(1);
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toHaveLength(3);
	});

	it("answers a table over existing ledgers `building`, and one of an account without ledgers `ready`", async () => {
		const admin = await bootstrap();
		expect((await createIndexes(admin.secret, { empty: simple() })).empty.status).toBe("ready");
		await addEntries(admin.secret, await newTwin(admin.secret), { a: { value: 1 } });
		expect((await createIndexes(admin.secret, { full: simple() })).full.status).toBe("building");
	});
});

describe("invalid definitions: 400101 with details at indexes.<name>…, nothing created", () => {
	it.each(["Bad-Name", "1abc", "A", "a".repeat(65), "with space", ""])("refuses the table name %j", async (name) => {
		await expectInvalid({ [name]: simple() }, `indexes.${name}`);
	});

	it("takes the longest table name the pattern allows", async () => {
		const admin = await bootstrap();
		const name = `_${"z9".repeat(31)}a`;
		expect(name).toHaveLength(64);
		expect((await createIndexes(admin.secret, { [name]: simple() }))[name].status).toBe("ready");
		expect((await indexTable(admin.secret, name)).rule).toBe("LEDGER.a != null");
	});

	it("takes table and property names that Object.prototype also has, and refuses __proto__", async () => {
		const admin = await bootstrap();
		const name: string = "constructor";
		const properties = Object.fromEntries(
			[name, "valueof"].map((p) => [p, ["integer", "{LEDGER[a]}"] as [string, string]]),
		);
		const made = await createIndexes(
			admin.secret,
			Object.fromEntries([
				[name, indexDefinition("true", properties)],
				["tostring", simple()],
			]),
		);
		expect(Object.keys(made)).toEqual(["constructor", "tostring"]);
		expect(made[name].properties.names).toEqual(["constructor", "valueof"]);
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { a: { value: 3 } });
		const page = await queryIndex(admin.secret, "constructor");
		expect(page.body.rows).toEqual([
			{ twin, properties: { constructor: 3, valueof: 3 }, updated_ts: expect.any(Number) },
		]);
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toEqual([
			"constructor",
			"tostring",
		]);
		const proto = await call("POST", INDEXES, {
			secret: admin.secret,
			body: `{"indexes": {"__proto__": ${JSON.stringify(simple())}}}`,
		});
		expectError(proto, 400, 400101);
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toEqual([
			"constructor",
			"tostring",
		]);
	});

	it("creates nothing when one table of several is invalid", async () => {
		const res = await expectInvalid({ good: simple(), bad: simple("LEDGER.a ==") }, "indexes.bad.rule", /position 11/);
		expect(res.body.details).toHaveLength(1);
	});

	it("names the position of a rule's syntax error", async () => {
		await expectInvalid({ t: simple("LEDGER.a == 1 and (") }, "indexes.t.rule", /position/);
		await expectInvalid({ t: simple("LEDGER.a ==") }, "indexes.t.rule", /position 11/);
	});

	it("holds rules to the rule language's limits", async () => {
		await expectInvalid({ t: simple(`LEDGER.a == '${"x".repeat(1030)}'`) }, "indexes.t.rule");
		await expectInvalid({ t: simple(`${"not (".repeat(40)}LEDGER.a == 1${")".repeat(40)}`) }, "indexes.t.rule");
		await expectInvalid({ t: simple("LEDGER.a == 1e999") }, "indexes.t.rule");
		await expectInvalid({ t: simple("LEDGER.a =~ '(a)\\\\1'") }, "indexes.t.rule");
		await expectInvalid({ t: simple("unknown == 1") }, "indexes.t.rule", /position 0/);
	});

	const forbidden = [
		"TWIN.x",
		"USER.x",
		"DICT.x",
		"user",
		"role",
		"now",
		"twin_status",
		"identity",
		"entry_name",
		"entry_value",
		"entry_created_ts",
		"entry_updated_ts",
		"value_changed_ts",
		"trigger",
		"old_value",
		"ROW.a",
	];
	it.each(forbidden)("refuses the root of %s with its position", async (variable) => {
		const root = variable.split(".")[0];
		const rule = `LEDGER.a == 1 and ${variable} != 'x'`;
		const res = await expectInvalid({ t: simple(rule) }, "indexes.t.rule");
		const detail = res.body.details.find((d: { path: string }) => d.path === "indexes.t.rule");
		expect(detail.message).toContain(`'${root}'`);
		expect(detail.message).toMatch(new RegExp(`position ${rule.indexOf(variable)}\\b`));
	});

	it("points at the root itself, not at the same word in a string or an entry name before it", async () => {
		const rule = "LEDGER.now == 'now' and LEDGER['user'] == 1 or now > 1";
		const res = await expectInvalid({ t: simple(rule) }, "indexes.t.rule");
		expect(res.body.details[0].message).toMatch(new RegExp(`'now'.*position ${rule.lastIndexOf("now")}\\b`));
	});

	it("takes LEDGER, ledger, account, twin and owner", async () => {
		const admin = await bootstrap();
		const rule = "LEDGER.a.b[0]['c'] == 1 or (ledger == account and twin != owner and LEDGER.d != null)";
		expect((await createIndexes(admin.secret, { t: simple(rule) })).t.rule).toBe(rule);
	});

	it("takes 1 to 32 properties", async () => {
		const none = { rule: "true", properties: { names: [], types: [] }, templates: { properties: {} } };
		await expectInvalid({ t: none }, "indexes.t.properties.names");
		const many = (n: number) =>
			indexDefinition(
				"true",
				Object.fromEntries(
					Array.from({ length: n }, (_, i) => [`p${i}`, ["integer", `{LEDGER[p${i}]}`] as [string, string]]),
				),
			);
		await expectInvalid({ t: many(33) }, "indexes.t.properties.names");
		const admin = await bootstrap();
		const made = await createIndexes(admin.secret, { t: many(32) });
		expect(made.t.properties.names).toHaveLength(32);
	});

	it("refuses duplicate and malformed property names", async () => {
		const duplicate = {
			rule: "true",
			properties: { names: ["a", "a"], types: ["integer", "integer"] },
			templates: { properties: { a: "{LEDGER[a]}" } },
		};
		await expectInvalid({ t: duplicate }, "indexes.t.properties.names.1");
		await expectInvalid(
			{ t: indexDefinition("true", { Upper: ["integer", "{LEDGER[a]}"] }) },
			"indexes.t.properties.names.0",
		);
		await expectInvalid(
			{ t: indexDefinition("true", { ["x".repeat(65)]: ["integer", "{LEDGER[a]}"] }) },
			"indexes.t.properties.names.0",
		);
	});

	it("refuses names and types of different lengths", async () => {
		const t = {
			rule: "true",
			properties: { names: ["a", "b"], types: ["integer"] },
			templates: { properties: { a: "{LEDGER[a]}", b: "{LEDGER[b]}" } },
		};
		await expectInvalid({ t }, "indexes.t.properties.types");
		const u = {
			rule: "true",
			properties: { names: ["a"], types: ["integer", "float"] },
			templates: { properties: { a: "{LEDGER[a]}" } },
		};
		await expectInvalid({ u }, "indexes.u.properties.types");
	});

	it("refuses an unknown type", async () => {
		await expectInvalid(
			{ t: indexDefinition("true", { a: ["blob", "{LEDGER[a]}"] }) },
			"indexes.t.properties.types.0",
			/unknown type/i,
		);
		await expectInvalid({ t: indexDefinition("true", { a: ["", "{LEDGER[a]}"] }) }, "indexes.t.properties.types.0");
	});

	it.each(["json", "jsonb", "date", "time", "interval", "uuid", "geometry", "geography"])(
		"refuses the original's type %s as not supported",
		async (type) => {
			await expectInvalid(
				{ t: indexDefinition("true", { ok: ["integer", "{LEDGER[a]}"], a: [type, "{LEDGER[a]}"] }) },
				"indexes.t.properties.types.1",
				/not supported/,
			);
		},
	);

	it("takes the type aliases and answers them as sent", async () => {
		const admin = await bootstrap();
		const types = [
			"string",
			"varchar",
			"text",
			"character varying",
			"integer",
			"int",
			"bigint",
			"smallint",
			"float",
			"double precision",
			"real",
			"numeric",
			"boolean",
			"bool",
			"timestamp",
			"timestamptz",
		];
		const definition = indexDefinition(
			"true",
			Object.fromEntries(types.map((type, i) => [`p${i}`, [type, `{LEDGER[p${i}]}`] as [string, string]])),
		);
		const made = await createIndexes(admin.secret, { t: definition });
		expect(made.t.properties).toEqual(definition.properties);
		expect((await indexTable(admin.secret, "t")).properties.types).toEqual(types);
	});

	it("wants exactly one template per property", async () => {
		const missing = {
			rule: "true",
			properties: { names: ["a", "b"], types: ["integer", "integer"] },
			templates: { properties: { a: "{LEDGER[a]}" } },
		};
		await expectInvalid({ t: missing }, "indexes.t.templates.properties.b");
		const extra = {
			rule: "true",
			properties: { names: ["a"], types: ["integer"] },
			templates: { properties: { a: "{LEDGER[a]}", z: "{LEDGER[z]}" } },
		};
		await expectInvalid({ t: extra }, "indexes.t.templates.properties.z");
		await expectInvalid({ t: { ...simple(), templates: {} } }, "indexes.t.templates.properties");
	});

	it.each([
		["{LEDGER[a]:>8}", /format spec/],
		["{LEDGER[a]!r}", /conversion/],
		["{twin:>40}", /format spec/],
		["{x}", /unknown field/],
		["{}", /empty field/],
		["{LEDGER}", /brackets/],
		["{LEDGER[a]", /without its \}/],
		["{LEDGER[]}", /empty \[\]/],
		["a } b", /single \}/],
		["{twin[x]}", /takes no/],
		["{LEDGER[a].}", /expected a name/],
		["x".repeat(257), /256/],
		[Array.from({ length: 9 }, () => "{twin}").join("-"), /8 fields/],
	])("refuses the template %j", async (template, message) => {
		await expectInvalid(
			{ t: indexDefinition("true", { a: ["string", template] }) },
			"indexes.t.templates.properties.a",
			message,
		);
	});

	it("takes a template of 256 characters with 8 fields", async () => {
		const admin = await bootstrap();
		const fields = "{LEDGER[a]}{LEDGER[b][0]}{LEDGER[c].d}{twin}{ledger}{owner}{{x}}{LEDGER[e][f][1]}{LEDGER[g]}";
		const template = fields + "x".repeat(256 - fields.length);
		expect(template).toHaveLength(256);
		const made = await createIndexes(admin.secret, { t: indexDefinition("true", { a: ["string", template] }) });
		expect(made.t.templates.properties.a).toBe(template);
	});

	it("refuses unknown and missing fields of a definition and of the body", async () => {
		await expectInvalid({ t: { ...simple(), database: "db" } }, "indexes.t.database");
		const { rule: _, ...noRule } = simple();
		await expectInvalid({ t: noRule }, "indexes.t.rule");
		const { properties: __, ...noProperties } = simple();
		await expectInvalid({ t: noProperties }, "indexes.t.properties");
		await expectInvalid(
			{ t: { ...simple(), properties: { names: ["a"], types: ["integer"], sizes: [1] } } },
			"indexes.t.properties.sizes",
		);
		await expectInvalid({ t: { ...simple(), rule: null } }, "indexes.t.rule");
		const admin = await bootstrap();
		expectError(
			await call("POST", INDEXES, { secret: admin.secret, body: { indexes: { t: simple() }, extra: 1 } }),
			400,
			400101,
		);
		expectError(await call("POST", INDEXES, { secret: admin.secret, body: {} }), 400, 400101);
		expectError(await call("POST", INDEXES, { secret: admin.secret, body: { indexes: [simple()] } }), 400, 400101);
		expect((await call("GET", INDEXES, { secret: admin.secret })).body).toEqual({ indexes: {} });
	});

	it("gives one detail per problem", async () => {
		const admin = await bootstrap();
		const res = await createRaw(admin.secret, {
			one: simple("now > 1"),
			two: {
				rule: "true",
				properties: { names: ["a", "b"], types: ["json", "blob"] },
				templates: { properties: { a: "{x}", b: "{LEDGER[b]}" } },
			},
		});
		expectError(res, 400, 400101);
		expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(
			[
				"indexes.one.rule",
				"indexes.two.properties.types.0",
				"indexes.two.properties.types.1",
				"indexes.two.templates.properties.a",
			].sort(),
		);
	});
});

describe("update_indexes_table", () => {
	it("replaces the fields given, keeps the others, and answers the record", async () => {
		const admin = await bootstrap();
		const made = (await createIndexes(admin.secret, { t: simple() })).t;
		await clockPast(made.updated_ts);
		const res = await call("PATCH", indexPath("t"), { secret: admin.secret, body: { rule: "LEDGER.a > 1" } });
		expect(res.status).toBe(200);
		expect(Object.keys(res.body)).toEqual(RECORD_KEYS);
		expect(res.body).toMatchObject({
			rule: "LEDGER.a > 1",
			properties: made.properties,
			templates: made.templates,
			status: "ready",
			created_ts: made.created_ts,
		});
		expect(res.body.updated_ts).toBeGreaterThan(made.updated_ts);
		expect(await indexTable(admin.secret, "t")).toEqual(res.body);

		const both = {
			properties: { names: ["b", "c"], types: ["text", "bool"] },
			templates: { properties: { b: "x{LEDGER[b]}", c: "{LEDGER[c]}" } },
		};
		const next = await call("PATCH", indexPath("t"), { secret: admin.secret, body: both });
		expect(next.status).toBe(200);
		expect(next.body).toMatchObject({ rule: "LEDGER.a > 1", ...both });
	});

	it("validates the definition the update would leave, and changes nothing when it does not hold", async () => {
		const admin = await bootstrap();
		const made = (await createIndexes(admin.secret, { t: simple() })).t;
		// New names without their templates: the stored templates no longer fit.
		const res = await call("PATCH", indexPath("t"), {
			secret: admin.secret,
			body: { properties: { names: ["b"], types: ["integer"] } },
		});
		expectError(res, 400, 400101);
		expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual([
			"templates.properties.a",
			"templates.properties.b",
		]);
		const rule = await call("PATCH", indexPath("t"), {
			secret: admin.secret,
			body: { rule: "LEDGER.a == 1 and TWIN.x == 1" },
		});
		expectError(rule, 400, 400101);
		expect(rule.body.details[0]).toEqual({ path: "rule", message: expect.stringMatching(/'TWIN'.*position 18\b/) });
		expectError(
			await call("PATCH", indexPath("t"), {
				secret: admin.secret,
				body: { properties: { names: ["a"], types: ["uuid"] } },
			}),
			400,
			400101,
		);
		expectError(
			await call("PATCH", indexPath("t"), {
				secret: admin.secret,
				body: { templates: { properties: { a: "{LEDGER[a]:>8}" } } },
			}),
			400,
			400101,
		);
		expectError(
			await call("PATCH", indexPath("t"), {
				secret: admin.secret,
				body: { templates: { properties: { a: "{LEDGER[a]}", b: "{LEDGER[b]}" } } },
			}),
			400,
			400101,
		);
		expect(await indexTable(admin.secret, "t")).toEqual(made);
	});

	it("needs one field at least, and refuses unknown ones and rename pairs", async () => {
		const admin = await bootstrap();
		const made = (await createIndexes(admin.secret, { t: simple() })).t;
		expectError(await call("PATCH", indexPath("t"), { secret: admin.secret, body: {} }), 400, 400101);
		expectError(await call("PATCH", indexPath("t"), { secret: admin.secret, body: { status: "ready" } }), 400, 400101);
		expectError(await call("PATCH", indexPath("t"), { secret: admin.secret, body: { rule: null } }), 400, 400101);
		const rename = {
			properties: { names: [["a", "b"]], types: ["integer"] },
			templates: { properties: { b: "{LEDGER[a]}" } },
		};
		expectError(await call("PATCH", indexPath("t"), { secret: admin.secret, body: rename }), 400, 400101);
		expect(await indexTable(admin.secret, "t")).toEqual(made);
	});

	it("changes nothing for the same definition", async () => {
		const admin = await bootstrap();
		const made = (await createIndexes(admin.secret, { t: simple() })).t;
		await clockPast(made.updated_ts);
		const same = await call("PATCH", indexPath("t"), { secret: admin.secret, body: simple() });
		expect(same.status).toBe(200);
		expect(same.body).toEqual(made);
		expect(await indexTable(admin.secret, "t")).toEqual(made);
	});

	it("answers 404102 for an absent table", async () => {
		const admin = await bootstrap();
		expectError(await call("PATCH", indexPath("none"), { secret: admin.secret, body: { rule: "true" } }), 404, 404102);
	});
});

describe("delete_indexes_table", () => {
	it("answers the record as it was; afterwards the name is 404102 on every route and free again", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await createIndexes(admin.secret, { t: simple(), other: simple() });
		await addEntries(admin.secret, twin, { a: { value: 5 } });
		const before = await indexTable(admin.secret, "t");
		expect(before.stats.rows).toBe(1);
		const deleted = await call("DELETE", indexPath("t"), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body).toEqual(before);
		expect(Object.keys(deleted.body)).toEqual(RECORD_KEYS);

		expectError(await call("GET", indexPath("t"), { secret: admin.secret }), 404, 404102);
		expectError(await call("PATCH", indexPath("t"), { secret: admin.secret, body: { rule: "true" } }), 404, 404102);
		expectError(await call("DELETE", indexPath("t"), { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", indexPath("t", "/data"), { secret: admin.secret }), 404, 404102);
		expectError(await queryIndex(admin.secret, "t"), 404, 404102);
		expect(Object.keys((await call("GET", INDEXES, { secret: admin.secret })).body.indexes)).toEqual(["other"]);

		const again = await createIndexes(admin.secret, { t: simple("true") });
		expect(again.t.rule).toBe("true");
		expect(again.t.stats).toEqual({ rows: 0, table_size: 0 });
	});

	it("leaves no row of a deleted table in D1 for long", async () => {
		const admin = await bootstrap();
		await createIndexes(admin.secret, { t: simple() });
		for (let i = 0; i < 3; i++) await addEntries(admin.secret, await newTwin(admin.secret), { a: { value: i } });
		const { uuid } = (await dbOf(admin.account)
			.prepare("SELECT uuid FROM index_tables WHERE account = ? AND name = 't'")
			.bind(admin.account)
			.first<{ uuid: string }>()) as { uuid: string };
		expect((await call("DELETE", indexPath("t"), { secret: admin.secret })).status).toBe(200);
		await until(
			async () =>
				(await dbOf(uuid)
					.prepare('SELECT count(*) AS n FROM index_rows WHERE "table" = ?')
					.bind(uuid)
					.first<{ n: number }>())!.n,
			(n) => n === 0,
			"the deleted table's rows to go",
		);
	});
});

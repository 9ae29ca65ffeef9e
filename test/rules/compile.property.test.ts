import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import type { CompareOp, Json, Rule } from "../../src/rules/ast";
import { compileRule } from "../../src/rules/compile";
import { evaluate, type Scope } from "../../src/rules/evaluate";
import { dbOf } from "../support/shards";

// The SQL compilation and the evaluator must agree: on every row, SQL answers either NULL
// (leave it to the evaluator) or exactly what the evaluator answers.

const KEYS = ["a", "b", "c"];
// Small alphabets and short strings, so that equal values, substrings and keys keep turning up.
const text = fc.oneof(
	fc.constantFrom("", "a", "b", "ab", "ba"),
	fc.string({ maxLength: 3, unit: fc.constantFrom("a", "b", "A", "é", "😀", "\uffff", "'", '"', " ", "\0") }),
);
const scalar: fc.Arbitrary<Json> = fc.oneof(
	fc.constant(null),
	fc.boolean(),
	fc.integer({ min: -3, max: 3 }),
	fc.double({ min: -4, max: 4, noNaN: true, noDefaultInfinity: true }),
	text,
);
const value: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
	v: fc.oneof(
		{ depthSize: "small", withCrossShrink: true },
		scalar,
		fc.array(tie("v"), { maxLength: 3 }),
		fc.dictionary(fc.constantFrom(...KEYS, "", "ab", "x y", "0"), tie("v"), { maxKeys: 3 }),
	),
})).v;
const description = fc.dictionary(fc.constantFrom(...KEYS), value, { maxKeys: 3 });

const pathKey = fc.oneof(
	{ arbitrary: fc.constantFrom<string | number>(...KEYS), weight: 6 },
	fc.constantFrom<string | number>("x y", "0", "", 0, 1, -1, 0.5, 'q"'),
);
const path = fc.oneof({ arbitrary: pathKey.map((k) => [k]), weight: 4 }, fc.constant([]), {
	arbitrary: fc.tuple(pathKey, pathKey),
	weight: 2,
});
// Twin variables dominate: a comparison of two constants is decided before SQL is involved.
const twinVar = fc.record({ kind: fc.constant("var"), root: fc.constant("TWIN"), path });
const literal = fc.oneof({ arbitrary: scalar, weight: 4 }, value).map((v) => ({ kind: "literal", value: v }) as Rule);
const operand: fc.Arbitrary<Rule> = fc.letrec<{ o: Rule }>((tie) => ({
	o: fc.oneof(
		{ depthSize: "small" },
		{ arbitrary: twinVar as fc.Arbitrary<Rule>, weight: 5 },
		{ arbitrary: literal, weight: 4 },
		fc.record({ kind: fc.constant("var"), root: fc.constant("USER"), path }) as fc.Arbitrary<Rule>,
		fc.constant<Rule>({ kind: "var", root: "USER", path: [] }),
		fc
			.constantFrom("account", "user", "role", "twin", "owner", "twin_status", "now")
			.map((root) => ({ kind: "var", root, path: [] }) as Rule),
		fc.array(tie("o"), { maxLength: 3 }).map((items) => ({ kind: "list", items }) as Rule),
	),
})).o;
const ops: CompareOp[] = ["==", "!=", "<", "<=", ">", ">=", "in", "=~", "!~"];
const rule: fc.Arbitrary<Rule> = fc.letrec<{ r: Rule }>((tie) => ({
	r: fc.oneof(
		{ depthSize: "small", withCrossShrink: true },
		fc.record({
			kind: fc.constant("compare"),
			op: fc.constantFrom(...ops),
			left: operand,
			right: operand,
		}) as fc.Arbitrary<Rule>,
		fc.record({
			kind: fc.constant("compare"),
			op: fc.constantFrom(...ops),
			left: twinVar,
			right: operand,
		}) as fc.Arbitrary<Rule>,
		fc.record({
			kind: fc.constant("compare"),
			op: fc.constantFrom(...ops),
			left: literal,
			right: twinVar,
		}) as fc.Arbitrary<Rule>,
		operand,
		tie("r").map((arg) => ({ kind: "not", arg }) as Rule),
		fc.record({
			kind: fc.constant("logical"),
			op: fc.constantFrom("and", "or"),
			left: tie("r"),
			right: tie("r"),
		}) as fc.Arbitrary<Rule>,
	),
})).r;

const ACCOUNT = "acc-1";
const user = { account: ACCOUNT, user: "usr-1", role: "rol-1" };
const columns = { uuid: "uuid", owner: "owner", status: "status", description: "description" };
type Row = { uuid: string; owner: string; status: string; description: Record<string, Json> };
let rows: Row[] = [];

// The probe's rows stand for ACCOUNT's twins, in its database.
const probe = () => dbOf(ACCOUNT);

beforeAll(async () => {
	await probe().exec(
		"CREATE TABLE IF NOT EXISTS rule_probe (uuid TEXT PRIMARY KEY, owner TEXT, status TEXT, description TEXT)",
	);
	const sampled = fc.sample(description, { numRuns: 60, seed: 7 });
	const fixed: Record<string, Json>[] = [
		{},
		{ a: null },
		{ a: "", b: "" },
		{ a: [], b: {} },
		{ a: true, b: 1, c: "a" },
	];
	rows = [...fixed, ...sampled].map((d, i) => ({
		uuid: `t-${i}`,
		owner: i % 2 ? ACCOUNT : "acc-2",
		status: i % 3 ? "alive" : "terminated",
		description: d,
	}));
	await probe().batch(
		rows.map((r) =>
			probe()
				.prepare("INSERT INTO rule_probe VALUES (?, ?, ?, ?)")
				.bind(r.uuid, r.owner, r.status, JSON.stringify(r.description)),
		),
	);
});

describe("compiled rules agree with the evaluator", () => {
	it("on random rules over random descriptions, in D1", async () => {
		let decidedInSql = 0;
		let total = 0;
		await fc.assert(
			fc.asyncProperty(
				rule,
				description,
				fc.integer({ min: 1_600_000_000, max: 1_800_000_000 }),
				async (r, userDescription, now) => {
					const scope: Omit<Scope, "twin"> = { user: { ...user, description: userDescription }, now };
					const sql = compileRule(r, scope, columns);
					const { results } = await probe().prepare(`SELECT uuid, (${sql}) AS m FROM rule_probe ORDER BY uuid`).all<{
						uuid: string;
						m: number | null;
					}>();
					const byUuid = new Map(results.map((x) => [x.uuid, x.m]));
					for (const row of rows) {
						const expected = evaluate(r, {
							...scope,
							twin: { ...row, description: JSON.parse(JSON.stringify(row.description)) },
						});
						const got = byUuid.get(row.uuid);
						total++;
						if (got === null) continue;
						decidedInSql++;
						expect({ row: row.description, sql: got === 1 }).toEqual({ row: row.description, sql: expected });
					}
				},
			),
			{ numRuns: 1000 },
		);
		// Most rows are decided in SQL; the evaluator is the exception, not the rule.
		expect(decidedInSql / total).toBeGreaterThan(0.5);
	}, 120_000);
});

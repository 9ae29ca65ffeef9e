import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { MAX_RULE_DEPTH, parseRule } from "../../../src/rules/parse";

const ok = (text: string) => {
	const result = parseRule(text);
	if (!result.ok) throw new Error(`${text}: ${result.message} at ${result.position}`);
	return result.rule;
};

describe("parseRule", () => {
	it("reads the example shape and the operators of the language", () => {
		expect(ok("TWIN.owner_name == USER.name")).toEqual({
			kind: "compare",
			op: "==",
			left: { kind: "var", root: "TWIN", path: ["owner_name"] },
			right: { kind: "var", root: "USER", path: ["name"] },
		});
		expect(ok("not (a_b in TWIN.x)".replace("a_b", "account"))).toMatchObject({ kind: "not" });
		expect(ok('TWIN.tags[0] =~ \'^a\' and TWIN.m["k"] !~ "b" or owner != account')).toMatchObject({
			kind: "logical",
			op: "or",
		});
		expect(ok("TWIN.n >= -1.5 and TWIN.n < 10 and TWIN.n <= 3 and TWIN.n > now")).toMatchObject({ kind: "logical" });
		expect(ok("twin_status in ['alive', null, true, false]")).toMatchObject({
			right: { kind: "list", items: [{ value: "alive" }, { value: null }, { value: true }, { value: false }] },
		});
		expect(ok("TWIN.a.b[2]")).toEqual({ kind: "var", root: "TWIN", path: ["a", "b", 2] });
	});

	it("binds `and` tighter than `or`", () => {
		expect(ok("true or false and false")).toMatchObject({ op: "or", right: { op: "and" } });
	});

	it.each([
		["TWIN.a == ", 10],
		["TWIN.a === 1", 9],
		["(TWIN.a == 1", 12],
		["TWIN.a + 1", 7],
		["'open", 5],
	])("reports the position of a syntax error in %j", (text, position) => {
		const result = parseRule(text);
		expect(result.ok).toBe(false);
		if (!result.ok) expect(result.position).toBe(position);
	});

	it.each([
		["unknown variable 'foo'", "TWIN.a == foo", 10],
		["function calls", "TWIN.a(1)", 6],
		["'?:'", "TWIN.a ? 1 : 2", 7],
		["index must be", "TWIN.a[USER.i]", 6],
		["'-' applies only", "-TWIN.a", 0],
		["single expression", "TWIN.a, TWIN.b", 6],
		["'ThisExpression'", "this", 0],
		["number out of range", "TWIN.a > 1e999", 9],
		["number out of range", "TWIN.a > -1e999", 10],
		["number out of range", "TWIN.a in [1, -1e999]", 15],
		// RE2 runs in linear time; what it cannot run is refused where the pattern goes wrong.
		["invalid regular expression", "TWIN.a =~ '(a)\\\\1'", 14],
		["invalid regular expression", "TWIN.a !~ 'x(?=y)'", 12],
		["invalid regular expression", "TWIN.a =~ '(?<!y)x'", 11],
		["invalid regular expression", "TWIN.a =~ '('", 11],
	])("refuses %s", (message, text, position) => {
		const result = parseRule(text);
		expect(result).toEqual({ ok: false, position, message: expect.stringContaining(message) });
	});

	it("accepts the patterns RE2 runs, however they would backtrack elsewhere", () => {
		for (const pattern of ["^(a+)+$", "^(\\w+\\s?)*$", "(?i)pump", "\\p{L}+", "[a-z]{3,50}"]) {
			expect(parseRule(`TWIN.a =~ '${pattern}'`).ok, pattern).toBe(true);
		}
	});

	it("limits length to 1024 characters and depth to 32", () => {
		expect(parseRule(`TWIN.a == '${"x".repeat(1010)}'`).ok).toBe(true);
		expect(parseRule(`TWIN.a == '${"x".repeat(1020)}'`)).toMatchObject({ ok: false, position: 1024 });
		const nested = (n: number) => `${"not ".repeat(n)}true`;
		expect(parseRule(nested(MAX_RULE_DEPTH - 1)).ok).toBe(true);
		expect(parseRule(nested(MAX_RULE_DEPTH))).toMatchObject({ ok: false, message: expect.stringContaining("deeper") });
		expect(parseRule(`${"(".repeat(500)}1${")".repeat(500)}`).ok).toBe(true);
	});

	it("never throws on random text or on token soup", () => {
		const tokens = [
			"TWIN",
			"USER",
			".",
			"[",
			"]",
			"(",
			")",
			"'",
			'"',
			"==",
			"!=",
			"<",
			">=",
			"and",
			"or",
			"not",
			"in",
			"=~",
			"!~",
			"0",
			"1.5e3",
			"-",
			"a",
			" ",
			",",
			"?",
			":",
			"\\",
			"null",
			"true",
			"this",
			"+",
			"!",
			"&&",
		];
		const soup = fc.array(fc.constantFrom(...tokens), { maxLength: 400 }).map((t) => t.join(""));
		fc.assert(
			fc.property(fc.oneof(fc.string({ maxLength: 1100, unit: "binary" }), soup), (text) => {
				const result = parseRule(text);
				expect(typeof result.ok).toBe("boolean");
				if (!result.ok) expect(result.position).toBeGreaterThanOrEqual(0);
			}),
			{ numRuns: 3000 },
		);
	}, 60_000);
});

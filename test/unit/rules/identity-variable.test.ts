import { describe, expect, it } from "vitest";
import { compileRule } from "../../../src/rules/compile";
import { evaluate, type Scope } from "../../../src/rules/evaluate";
import { parseRule } from "../../../src/rules/parse";

const scope: Scope = { user: { account: "a", user: "u", role: "r", description: {} }, now: 1 };
const rule = (text: string) => {
	const parsed = parseRule(text);
	if (!parsed.ok) throw new Error(parsed.message);
	return parsed.rule;
};

describe("the identity variable", () => {
	it("is the identity in identity rules and null elsewhere", () => {
		expect(evaluate(rule("identity == 'RFID#1' and 'RFID#' in identity"), { ...scope, identity: "RFID#1" })).toBe(true);
		expect(evaluate(rule("identity == null"), scope)).toBe(true);
		const columns = { uuid: "uuid", owner: "owner", status: "status", description: "description" };
		// A constant: no column of the twin is read for it.
		expect(compileRule(rule("identity == null"), scope, columns)).toBe("1");
		expect(compileRule(rule("identity == null"), { ...scope, identity: "X#1" }, columns)).toBe("0");
	});
});

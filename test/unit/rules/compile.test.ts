import { describe, expect, it } from "vitest";
import { compileRule } from "../../../src/rules/compile";
import { parseRule } from "../../../src/rules/parse";

// How the scans answer such rules, and what they cost, is test/scan/bounds.test.ts's.
describe("substrings", () => {
	it("never reach SQLite's instr(), whichever side is the literal", () => {
		const scope = { user: { account: "a", user: "u", role: "r", description: {} }, now: 0 };
		const columns = { uuid: "uuid", owner: "owner", status: "status", description: "description" };
		for (const text of ["TWIN.y in TWIN.x", "TWIN.x in 'literal'", "'literal' in TWIN.x", "USER.name in TWIN.x"]) {
			const parsed = parseRule(text);
			if (!parsed.ok) throw new Error(parsed.message);
			expect(compileRule(parsed.rule, scope, columns)).not.toMatch(/instr|like|glob/i);
		}
	});
});

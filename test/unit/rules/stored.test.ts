import { describe, expect, it } from "vitest";
import { parseRule } from "../../../src/rules/parse";
import { parseStoredRule, ruleOf, STORED_RULE_CACHE_SIZE } from "../../../src/rules/stored";

describe("stored rules", () => {
	it("are parsed once per isolate: the same text gives the very same tree", () => {
		const text = `TWIN.kind == "stored-${crypto.randomUUID()}"`;
		const first = parseStoredRule(text);
		expect(first).toEqual(parseRule(text));
		expect(parseStoredRule(text)).toBe(first);
		expect(ruleOf(text)).toBe(first.ok ? first.rule : undefined);
	});

	it("keep at most STORED_RULE_CACHE_SIZE texts, the least recently used leaving first", () => {
		const texts = Array.from(
			{ length: STORED_RULE_CACHE_SIZE + 1 },
			(_, i) => `now > ${i} and account == "${crypto.randomUUID()}"`,
		);
		const results = texts.slice(0, STORED_RULE_CACHE_SIZE).map(parseStoredRule);
		// Used again, the first text is no longer the least recently used: the second is.
		expect(parseStoredRule(texts[0])).toBe(results[0]);
		parseStoredRule(texts[STORED_RULE_CACHE_SIZE]);
		expect(parseStoredRule(texts[0])).toBe(results[0]);
		expect(parseStoredRule(texts[2])).toBe(results[2]);
		const again = parseStoredRule(texts[1]);
		expect(again).not.toBe(results[1]);
		expect(again).toEqual(results[1]);
	});

	it("read a text the parser refuses today as a rule that shows nothing", () => {
		expect(ruleOf("TWIN.a ==")).toEqual({ kind: "literal", value: false });
		expect(ruleOf(null)).toBeNull();
	});
});

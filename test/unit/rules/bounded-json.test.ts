import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/rules/ast";
import { JsonTexts, jsonWithin } from "../../../src/rules/bounded-json";
import { Budget, BudgetExceeded } from "../../../src/rules/strings";

// The JSON an index template writes of a value: JSON.stringify's text, written no further than
// the room a template's text has left.

const spentOn = (work: (budget: Budget) => unknown) => {
	const budget = new Budget(1_000_000_000, 0);
	work(budget);
	return 1_000_000_000 - budget.remaining;
};

// About 62 KiB of JSON: an object of 6,000 members, a list of 6,000 strings, one long string.
const wideObject = Object.fromEntries(Array.from({ length: 6000 }, (_, i) => [`k${i}`, i]));
const longList = Array.from({ length: 6000 }, (_, i) => `item ${i}`);
const longString = "x".repeat(62_000);

describe("jsonWithin", () => {
	it("writes what JSON.stringify writes whenever it fits", () => {
		fc.assert(
			fc.property(fc.jsonValue(), (value) => {
				const text = JSON.stringify(value);
				expect(jsonWithin(value as Json, text.length)).toBe(text);
				expect(jsonWithin(value as Json, Number.MAX_SAFE_INTEGER)).toBe(text);
			}),
		);
	});

	it("answers undefined when the text would pass the room by one character", () => {
		fc.assert(
			fc.property(fc.jsonValue(), (value) => {
				const text = JSON.stringify(value);
				expect(jsonWithin(value as Json, text.length - 1)).toBeUndefined();
			}),
		);
	});

	it("keeps JSON.stringify's key order, integer-like keys first, and its escapes", () => {
		const value = { b: 1, "2": "two", a: ['"quoted"\n', "\u2028", "\ud800"], "1": null, __proto__x: {} } as Json;
		expect(jsonWithin(value, 1000)).toBe(JSON.stringify(value));
		const parsed = JSON.parse('{"__proto__":{"x":1},"y":[true,false,-0,1e21]}') as Json;
		expect(jsonWithin(parsed, 1000)).toBe(JSON.stringify(parsed));
	});

	it("spends about the room on a value far larger than it, not the value's size", () => {
		for (const value of [wideObject, longList, longString] as Json[]) {
			expect(JSON.stringify(value).length).toBeGreaterThan(60_000);
			const units = spentOn((budget) => expect(jsonWithin(value, 1024, budget)).toBeUndefined());
			expect(units).toBeLessThan(1024 * 3);
		}
	});

	it("stops with BudgetExceeded once the budget is spent, whatever the room", () => {
		expect(() => jsonWithin(longList, Number.MAX_SAFE_INTEGER, new Budget(5000, 0))).toThrow(BudgetExceeded);
	});
});

describe("JsonTexts", () => {
	it("writes an object once however many templates read it, and charges each read", () => {
		const texts = new JsonTexts(1024);
		const value = { a: [1, 2, 3], b: "text" } as Json;
		const first = spentOn((budget) => expect(texts.of(value, budget)).toBe(JSON.stringify(value)));
		const again = spentOn((budget) => expect(texts.of(value, budget)).toBe(JSON.stringify(value)));
		expect(again).toBeGreaterThan(0);
		expect(again).toBeLessThan(first);
		expect(texts.of(wideObject as Json)).toBeUndefined();
		expect(texts.of(12)).toBe("12");
	});
});

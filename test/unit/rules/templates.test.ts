import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/rules/ast";
import { JsonTexts } from "../../../src/rules/bounded-json";
import { Budget } from "../../../src/rules/strings";
import {
	MAX_TEMPLATE_FIELDS,
	MAX_TEMPLATE_LENGTH,
	parseTemplate,
	renderTemplate,
	type Template,
	type TemplateInput,
} from "../../../src/rules/templates";

const INPUT: TemplateInput = {
	entries: {
		status: { rpm: 1200, on: true, label: "idle", nested: { deep: [1, { x: "y" }] } },
		pos: { lat: 52.5, lon: 13.4 },
		list: ["a", "b", { c: 3 }],
		name: "pump-7",
		count: 3,
		flag: false,
		nothing: null,
		"odd]": 0,
		"with space": "spaced",
		"a:b": "colon",
		"{}": "braces",
		digits: { "0": "zero key", "007": "padded key" },
	},
	twin: "11111111-1111-4111-8111-111111111111",
	ledger: "22222222-2222-4222-8222-222222222222",
	owner: "33333333-3333-4333-8333-333333333333",
};

function parsed(text: string): Template {
	const result = parseTemplate(text);
	if (!result.ok) throw new Error(`${text}: ${result.message} at ${result.position}`);
	return result.template;
}

function render(text: string, input: TemplateInput = INPUT): Json {
	return renderTemplate(parsed(text), input);
}

function refused(text: string) {
	const result = parseTemplate(text);
	if (result.ok) throw new Error(`${text} parsed`);
	return { position: result.position, message: result.message };
}

describe("parseTemplate", () => {
	it("reads text, fields and accessors into parts", () => {
		expect(parsed("rpm: {LEDGER[status][rpm]} at {twin}")).toEqual({
			parts: [
				"rpm: ",
				{ kind: "entry", entry: "status", path: [{ key: "rpm", index: null }] },
				" at ",
				{ kind: "twin" },
			],
		});
		expect(parsed("{LEDGER[pos].lat}{LEDGER[list][0]}{ledger}{owner}")).toEqual({
			parts: [
				{ kind: "entry", entry: "pos", path: [{ key: "lat", index: null }] },
				{ kind: "entry", entry: "list", path: [{ key: "0", index: 0 }] },
				{ kind: "ledger" },
				{ kind: "owner" },
			],
		});
	});

	it("keeps digits as both a list index and a key", () => {
		expect(parsed("{LEDGER[a][007]}")).toEqual({
			parts: [{ kind: "entry", entry: "a", path: [{ key: "007", index: 7 }] }],
		});
	});

	it("reads {{ and }} as braces and merges them into the text", () => {
		expect(parsed("{{a}} {{{twin}}}")).toEqual({ parts: ["{a} {", { kind: "twin" }, "}"] });
		expect(parsed("}}")).toEqual({ parts: ["}"] });
		expect(parsed("")).toEqual({ parts: [] });
		expect(parsed("plain")).toEqual({ parts: ["plain"] });
	});

	it("takes any character but ] inside brackets, braces and colons included", () => {
		expect(parsed("{LEDGER[a:b]}{LEDGER[{}]}{LEDGER[with space][x!r]}")).toEqual({
			parts: [
				{ kind: "entry", entry: "a:b", path: [] },
				{ kind: "entry", entry: "{}", path: [] },
				{ kind: "entry", entry: "with space", path: [{ key: "x!r", index: null }] },
			],
		});
	});

	it("accepts .names of letters, digits and _ not starting with a digit", () => {
		expect(parsed("{LEDGER[a]._b9.C}")).toEqual({
			parts: [
				{
					kind: "entry",
					entry: "a",
					path: [
						{ key: "_b9", index: null },
						{ key: "C", index: null },
					],
				},
			],
		});
		expect(refused("{LEDGER[a].9}")).toEqual({ position: 11, message: "expected a name (letters, digits, _) after ." });
		expect(refused("{LEDGER[a].}")).toEqual({ position: 11, message: "expected a name (letters, digits, _) after ." });
		expect(refused("{LEDGER[a].-x}")).toMatchObject({ position: 11 });
	});

	it("refuses conversions and format specs where they start", () => {
		const message = "conversions and format specs are not supported";
		expect(refused("{LEDGER[a]!r}")).toEqual({ position: 10, message });
		expect(refused("x {LEDGER[a]:>8}")).toEqual({ position: 12, message });
		expect(refused("{LEDGER[a].b!s}")).toEqual({ position: 12, message });
		expect(refused("{twin:>40}")).toEqual({ position: 5, message });
		expect(refused("{owner!r}")).toEqual({ position: 6, message });
	});

	it("refuses any other field with its position", () => {
		expect(refused("ab{x}")).toEqual({
			position: 3,
			message: 'unknown field "x": use LEDGER[<entry>], twin, ledger or owner',
		});
		expect(refused("{}")).toEqual({ position: 0, message: "empty field: name LEDGER[<entry>], twin, ledger or owner" });
		expect(refused("a{:>8}")).toEqual({
			position: 2,
			message: "expected LEDGER[<entry>], twin, ledger or owner after {",
		});
		expect(refused("{[a]}")).toMatchObject({ position: 1 });
		expect(refused("{LEDGER}")).toEqual({ position: 7, message: "name the entry in brackets: LEDGER[<entry>]" });
		expect(refused("{LEDGER.a}")).toEqual({ position: 7, message: "name the entry in brackets: LEDGER[<entry>]" });
		expect(refused("{LEDGER!r}")).toMatchObject({ position: 7 });
		expect(refused("{ledger[a]}")).toEqual({ position: 7, message: "ledger takes no [key] or .name" });
		expect(refused("{twin.a}")).toEqual({ position: 5, message: "twin takes no [key] or .name" });
		expect(refused("{Twin}")).toMatchObject({ position: 1 });
		expect(refused("{ twin}")).toMatchObject({ position: 1 });
		expect(refused("{ledger_x}")).toMatchObject({ position: 1 });
		expect(refused("{TWIN[a]}")).toMatchObject({ position: 1 });
		expect(refused("{0}")).toMatchObject({ position: 1 });
		expect(refused("{LEDGER[]}")).toEqual({ position: 7, message: "empty []: name an entry or key" });
		expect(refused("{LEDGER[a][]}")).toEqual({ position: 10, message: "empty []: name an entry or key" });
		expect(refused("{LEDGER[a]x}")).toEqual({ position: 10, message: 'expected [, . or } to end the field, not "x"' });
		expect(refused("{twin }")).toEqual({
			position: 1,
			message: 'unknown field "twin ": use LEDGER[<entry>], twin, ledger or owner',
		});
		expect(refused("{LEDGER[a]{}")).toMatchObject({ position: 10 });
		expect(refused("{twin{}")).toEqual({ position: 5, message: 'expected } to end the field, not "{"' });
	});

	it("refuses unbalanced braces", () => {
		expect(refused("a } b")).toEqual({ position: 2, message: "single }: write }} for a literal brace" });
		expect(refused("}}}")).toEqual({ position: 2, message: "single }: write }} for a literal brace" });
		expect(refused("ab{")).toEqual({ position: 2, message: "{ without its }" });
		expect(refused("x{twin")).toEqual({ position: 1, message: "{ without its }" });
		expect(refused("{LEDGER")).toEqual({ position: 0, message: "{ without its }" });
		expect(refused("x{LEDGER[a]")).toEqual({ position: 1, message: "{ without its }" });
		expect(refused("x{LEDGER[a].b")).toEqual({ position: 1, message: "{ without its }" });
		expect(refused("{LEDGER[a}")).toEqual({ position: 7, message: "[ without its ]" });
		expect(refused("{LEDGER[a][b")).toEqual({ position: 10, message: "[ without its ]" });
		expect(refused("{{{")).toEqual({ position: 2, message: "{ without its }" });
	});

	it("takes at most MAX_TEMPLATE_LENGTH characters", () => {
		expect(MAX_TEMPLATE_LENGTH).toBe(256);
		const longest = `{LEDGER[a]}${"x".repeat(MAX_TEMPLATE_LENGTH - 11)}`;
		expect(longest).toHaveLength(256);
		expect(parseTemplate(longest).ok).toBe(true);
		expect(refused(`${longest}x`)).toEqual({ position: 256, message: "longer than 256 characters" });
	});

	it("takes at most MAX_TEMPLATE_FIELDS fields, braces not counted", () => {
		expect(MAX_TEMPLATE_FIELDS).toBe(8);
		const eight = "{twin}-".repeat(8);
		expect(parseTemplate(`{{}}${eight}`).ok).toBe(true);
		expect(refused(`${eight}{owner}`)).toEqual({ position: 56, message: "more than 8 fields" });
	});
});

describe("renderTemplate", () => {
	it("yields one field alone as its JSON value", () => {
		expect(render("{LEDGER[status]}")).toEqual(INPUT.entries.status);
		expect(render("{LEDGER[list]}")).toEqual(["a", "b", { c: 3 }]);
		expect(render("{LEDGER[status][rpm]}")).toBe(1200);
		expect(render("{LEDGER[pos].lat}")).toBe(52.5);
		expect(render("{LEDGER[flag]}")).toBe(false);
		expect(render("{LEDGER[name]}")).toBe("pump-7");
		expect(render("{twin}")).toBe(INPUT.twin);
		expect(render("{ledger}")).toBe(INPUT.ledger);
		expect(render("{owner}")).toBe(INPUT.owner);
		expect(render("{LEDGER[nothing]}")).toBeNull();
		expect(render("{LEDGER[absent]}")).toBeNull();
	});

	it("renders text with strings as they are and other values as compact JSON", () => {
		expect(render("{LEDGER[name]}: {LEDGER[status][rpm]} rpm")).toBe("pump-7: 1200 rpm");
		expect(render("{LEDGER[status][on]}/{LEDGER[flag]}")).toBe("true/false");
		expect(render("pos={LEDGER[pos]}")).toBe('pos={"lat":52.5,"lon":13.4}');
		expect(render("{LEDGER[list]} ")).toBe('["a","b",{"c":3}] ');
		expect(render("{twin}/{ledger}/{owner}")).toBe(`${INPUT.twin}/${INPUT.ledger}/${INPUT.owner}`);
		expect(render("{LEDGER[name]}{LEDGER[count]}")).toBe("pump-73");
		expect(render("{{{LEDGER[name]}}}")).toBe("{pump-7}");
	});

	it("renders text without fields as that text, even a brace alone", () => {
		expect(render("")).toBe("");
		expect(render("constant")).toBe("constant");
		expect(render("{{")).toBe("{");
	});

	it("yields null for the whole text when any field is null or missing", () => {
		expect(render("{LEDGER[name]} {LEDGER[nothing]}")).toBeNull();
		expect(render("{LEDGER[name]} {LEDGER[absent]}")).toBeNull();
		expect(render("x{LEDGER[status][absent]}")).toBeNull();
		expect(render("{LEDGER[name]}-")).toBe("pump-7-");
	});

	it("indexes lists with digits and looks up keys of anything else", () => {
		expect(render("{LEDGER[list][1]}")).toBe("b");
		expect(render("{LEDGER[list][2][c]}")).toBe(3);
		expect(render("{LEDGER[list][2].c}")).toBe(3);
		expect(render("{LEDGER[list][3]}")).toBeNull();
		expect(render("{LEDGER[list][01]}")).toBe("b");
		expect(render("{LEDGER[status][nested][deep][1].x}")).toBe("y");
		// Digits on an object name its key, as written.
		expect(render("{LEDGER[digits][0]}")).toBe("zero key");
		expect(render("{LEDGER[digits][007]}")).toBe("padded key");
		expect(render("{LEDGER[digits][7]}")).toBeNull();
		// Keys on a list, and anything on a scalar, read nothing.
		expect(render("{LEDGER[list][a]}")).toBeNull();
		expect(render("{LEDGER[list].length}")).toBeNull();
		expect(render("{LEDGER[name][0]}")).toBeNull();
		expect(render("{LEDGER[name].length}")).toBeNull();
		expect(render("{LEDGER[count][0]}")).toBeNull();
		expect(render("{LEDGER[nothing][a]}")).toBeNull();
	});

	it("reads entries with any name, and only the ledger's own", () => {
		expect(render("{LEDGER[with space]}")).toBe("spaced");
		expect(render("{LEDGER[a:b]}")).toBe("colon");
		expect(render("{LEDGER[{}]}")).toBe("braces");
		expect(render("{LEDGER[constructor]}")).toBeNull();
		expect(render("{LEDGER[__proto__]}")).toBeNull();
		expect(render("{LEDGER[status][constructor]}")).toBeNull();
		expect(render("{LEDGER[status][toString]}")).toBeNull();
	});

	it("renders the same parsed template for other inputs", () => {
		const template = parsed("{owner}:{LEDGER[n]}");
		expect(renderTemplate(template, { ...INPUT, entries: { n: 1 } })).toBe(`${INPUT.owner}:1`);
		expect(renderTemplate(template, { ...INPUT, entries: { n: "one" } })).toBe(`${INPUT.owner}:one`);
		expect(renderTemplate(template, { ...INPUT, entries: {} })).toBeNull();
	});
});

describe("renderTemplate's bounds", () => {
	// About 62 KiB of value: a string, and an object whose JSON is as long.
	const big: TemplateInput = {
		...INPUT,
		entries: {
			s: "x".repeat(62_000),
			o: Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, i])),
			short: "y".repeat(500),
		},
	};
	const spent = (text: string, texts?: JsonTexts) => {
		const budget = new Budget(1_000_000_000, 0);
		const value = renderTemplate(parsed(text), big, budget, texts);
		return { value, units: 1_000_000_000 - budget.remaining };
	};

	it("stops a text at 1,024 characters: longer is null, up to it is kept", () => {
		expect(spent(`${"a".repeat(24)}{LEDGER[short]}{LEDGER[short]}`).value).toBe(`${"a".repeat(24)}${"y".repeat(1000)}`);
		expect(spent(`${"a".repeat(25)}{LEDGER[short]}{LEDGER[short]}`).value).toBeNull();
	});

	it("charges a template reading a 62 KiB entry eight times about what 1,024 characters cost", () => {
		for (const entry of ["s", "o"]) {
			const { value, units } = spent(`x${`{LEDGER[${entry}]}`.repeat(8)}`);
			expect(value).toBeNull();
			expect(units).toBeGreaterThan(0);
			expect(units).toBeLessThan(4 * 1024);
		}
		// One field alone yields the value as it is: nothing is written.
		expect(spent("{LEDGER[s]}").units).toBeLessThan(100);
	});

	it("charges the characters a text is made of", () => {
		expect(spent("{LEDGER[short]}:{LEDGER[short]}").units).toBeGreaterThanOrEqual(1001);
	});

	it("writes an object's JSON once per ledger, shared by the templates that read it", () => {
		const texts = new JsonTexts(1024);
		const small: TemplateInput = { ...INPUT, entries: { o: { a: [1, 2, 3], b: "text" } } };
		const first = new Budget(1_000_000, 0);
		expect(renderTemplate(parsed("o={LEDGER[o]}"), small, first, texts)).toBe('o={"a":[1,2,3],"b":"text"}');
		const second = new Budget(1_000_000, 0);
		expect(renderTemplate(parsed("again {LEDGER[o]}"), small, second, texts)).toBe('again {"a":[1,2,3],"b":"text"}');
		expect(1_000_000 - second.remaining).toBeLessThan(1_000_000 - first.remaining);
	});
});

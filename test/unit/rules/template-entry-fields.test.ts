import { describe, expect, it } from "vitest";
import { Budget } from "../../../src/rules/strings";
import { parseTemplate, renderTemplate, type Template, type TemplateInput } from "../../../src/rules/templates";

const INPUT: TemplateInput = {
	entries: { status: { rpm: 1200 } },
	twin: "11111111-1111-4111-8111-111111111111",
	ledger: "22222222-2222-4222-8222-222222222222",
	owner: "33333333-3333-4333-8333-333333333333",
	entry: { name: "temp", value: { serial: "A-7", list: [10, 20], "0": "key" }, value_changed_ts: 1700000000.5 },
};

function parsed(text: string): Template {
	const result = parseTemplate(text, { entryFields: true });
	if (!result.ok) throw new Error(`${text}: ${result.message} at ${result.position}`);
	return result.template;
}

function refused(text: string, entryFields = true) {
	const result = parseTemplate(text, { entryFields });
	if (result.ok) throw new Error(`${text} parsed`);
	return { position: result.position, message: result.message };
}

describe("templates with the entry's fields", () => {
	it("reads entry_name, entry_value with accessors and value_changed_ts", () => {
		expect(parsed("{entry_name}/{entry_value[serial]}{entry_value.serial}{entry_value}{value_changed_ts}")).toEqual({
			parts: [
				{ kind: "entry_name" },
				"/",
				{ kind: "entry_value", path: [{ key: "serial", index: null }] },
				{ kind: "entry_value", path: [{ key: "serial", index: null }] },
				{ kind: "entry_value", path: [] },
				{ kind: "value_changed_ts" },
			],
		});
	});

	it("renders them from the entry being written", () => {
		const render = (text: string) => renderTemplate(parsed(text), INPUT);
		expect(render("{entry_name}")).toBe("temp");
		expect(render("{entry_value[serial]}")).toBe("A-7");
		expect(render("{entry_value.serial}")).toBe("A-7");
		expect(render("{entry_value[list][1]}")).toBe(20);
		expect(render("{entry_value[0]}")).toBe("key");
		expect(render("{value_changed_ts}")).toBe(1700000000.5);
		expect(render("{entry_name}-{entry_value[serial]}@{LEDGER[status][rpm]}")).toBe("temp-A-7@1200");
		expect(render("{entry_value[missing]}")).toBeNull();
		expect(render("x{entry_value[missing]}")).toBeNull();
	});

	it("renders them as null without an entry", () => {
		const { entry: _, ...noEntry } = INPUT;
		expect(renderTemplate(parsed("{entry_name}"), noEntry)).toBeNull();
		expect(renderTemplate(parsed("{entry_value}"), noEntry)).toBeNull();
		expect(renderTemplate(parsed("{value_changed_ts}"), noEntry)).toBeNull();
	});

	it("charges their reads to the budget", () => {
		const budget = new Budget(1000);
		renderTemplate(parsed("{entry_name}{entry_value[serial]}"), INPUT, budget);
		expect(budget.remaining).toBeLessThan(1000);
	});

	it("refuses accessors where there is nothing to read, and conversions", () => {
		expect(refused("{entry_name[a]}")).toEqual({ position: 11, message: "entry_name takes no [key] or .name" });
		expect(refused("{value_changed_ts.a}")).toEqual({
			position: 17,
			message: "value_changed_ts takes no [key] or .name",
		});
		expect(refused("{entry_value[]}")).toEqual({ position: 12, message: "empty []: name an entry or key" });
		expect(refused("{entry_value!r}")).toEqual({
			position: 12,
			message: "conversions and format specs are not supported",
		});
		expect(refused("{entry_value[a]")).toEqual({ position: 0, message: "{ without its }" });
		expect(refused("{x}")).toEqual({
			position: 1,
			message:
				'unknown field "x": use LEDGER[<entry>], twin, ledger, owner, entry_name, entry_value or value_changed_ts',
		});
	});

	it("stays refused in Indexes templates, with the same messages", () => {
		for (const [text, field] of [
			["{entry_name}", "entry_name"],
			["{entry_value[serial]}", "entry_value"],
			["{value_changed_ts}", "value_changed_ts"],
		]) {
			expect(parseTemplate(text)).toEqual({
				ok: false,
				position: 1,
				message: `unknown field "${field}": use LEDGER[<entry>], twin, ledger or owner`,
			});
			expect(refused(text, false).position).toBe(1);
		}
	});
});

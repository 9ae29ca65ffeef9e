import { describe, expect, it } from "vitest";
import { compileRule } from "../../../src/rules/compile";
import { evaluate, type Scope } from "../../../src/rules/evaluate";
import { parseRule } from "../../../src/rules/parse";

const user = { account: "acc-1", user: "u-1", role: "r-1", description: {} };
const withEntry: Scope = {
	user,
	now: 1_700_000_000,
	entry: {
		ledger: "acc-2",
		name: "temperature",
		value: { c: 31 },
		created_ts: 10,
		updated_ts: 20,
		value_changed_ts: 30,
		values: { temperature: { c: 31 }, serial: "A-17" },
		trigger: "ledger.entry.updated",
		old_value: { c: 29 },
	},
};

function rule(text: string) {
	const parsed = parseRule(text);
	if (!parsed.ok) throw new Error(parsed.message);
	return parsed.rule;
}

describe("the ledger entry variables", () => {
	it.each([
		"ledger == 'acc-2' and entry_name == 'temperature'",
		"entry_value.c > 30 and old_value.c < 30",
		"entry_created_ts == 10 and entry_updated_ts == 20 and value_changed_ts == 30",
		"LEDGER.serial == 'A-17' and LEDGER['temperature'].c == 31 and LEDGER.missing == null",
		"trigger == 'ledger.entry.updated'",
	])("read the entry a rule is about: %s", (text) => {
		expect(evaluate(rule(text), withEntry)).toBe(true);
	});

	it("read null where the rule is about no entry, in the evaluator and in SQL", () => {
		const text =
			"ledger == null and entry_value == null and LEDGER.serial == null and trigger == null and old_value == null";
		expect(evaluate(rule(text), { user, now: 1 })).toBe(true);
		const columns = { uuid: "uuid", owner: "owner", status: "status", description: "description" };
		expect(compileRule(rule(text), { user, now: 1 }, columns)).not.toMatch(/NULL/);
		expect(compileRule(rule("entry_value == 1"), { user, now: 1 }, columns)).toBe("0");
	});
});

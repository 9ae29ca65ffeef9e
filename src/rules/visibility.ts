import type { Caller } from "../base/caller";
import type { Json, Rule } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { parseRule } from "./parse";

export function scopeOf(caller: Caller, now: number): Omit<Scope, "twin"> {
	const { account, user, role, description } = caller;
	return { user: { account, user, role, description: description as Json }, now };
}

// Stored rules were parsed when written. One the parser refuses today (written before a
// stricter check: an infinite number, a pattern RE2 cannot run) shows nothing rather than
// falling back to the wider default of no rule.
export function ruleOf(text: string | null | undefined): Rule | null {
	if (!text) return null;
	const parsed = parseRule(text);
	return parsed.ok ? parsed.rule : { kind: "literal", value: false };
}

type TwinView = { uuid: string; owner: string; status: string; description: unknown };

// A role without a twin rule sees its own account's twins; with one, exactly those the rule
// accepts.
export function isVisible(caller: Caller, twin: TwinView, now: number): boolean {
	const rule = ruleOf(caller.rules.twin);
	if (!rule) return twin.owner === caller.account;
	return evaluate(rule, { ...scopeOf(caller, now), twin: { ...twin, description: twin.description as Json } });
}

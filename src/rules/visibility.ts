import type { Caller } from "../base/caller";
import type { Json } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { ruleOf } from "./stored";
import { Budget, WORK_UNITS, withinBudget } from "./strings";

export function scopeOf(caller: Caller, now: number): Omit<Scope, "twin"> {
	const { account, user, role, description, dict } = caller;
	return { user: { account, user, role, description: description as Json, dict: (dict ?? null) as Json }, now };
}

// What the rules read of a twin.
export type TwinView = { uuid: string; owner: string; status: string; description: unknown };

// A role without a twin rule sees its own account's twins; with one, exactly those the rule
// accepts within `budget` (the request's, when it decides on many twins). A twin whose rule
// needs more work than that is not visible: the answer shows less, never more, and it is the
// same 404 as for a hidden twin, so it tells nothing the rule's own answer would not.
export function isVisible(caller: Caller, twin: TwinView, now: number, budget = new Budget(WORK_UNITS)): boolean {
	const rule = ruleOf(caller.rules.twin);
	if (!rule) return twin.owner === caller.account;
	return withinBudget(
		() => evaluate(rule, { ...scopeOf(caller, now), twin: { ...twin, description: twin.description as Json }, budget }),
		false,
	);
}

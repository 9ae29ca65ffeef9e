import type { Caller } from "../base/caller";
import type { Json } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { ruleOf } from "./stored";

export function scopeOf(caller: Caller, now: number): Omit<Scope, "twin"> {
	const { account, user, role, description } = caller;
	return { user: { account, user, role, description: description as Json }, now };
}

type TwinView = { uuid: string; owner: string; status: string; description: unknown };

// A role without a twin rule sees its own account's twins; with one, exactly those the rule
// accepts.
export function isVisible(caller: Caller, twin: TwinView, now: number): boolean {
	const rule = ruleOf(caller.rules.twin);
	if (!rule) return twin.owner === caller.account;
	return evaluate(rule, { ...scopeOf(caller, now), twin: { ...twin, description: twin.description as Json } });
}

import type { Caller } from "../http/auth";
import type { Json, Rule } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { parseRule } from "./parse";

// What a rule sees of the caller.
export type Viewer = Pick<Caller, "account" | "user" | "role" | "description"> & { twinRule: string | null };

export function viewerOf(caller: Caller): Viewer {
	const { account, user, role, description } = caller;
	return { account, user, role, description, twinRule: caller.rules.twin };
}

export function scopeOf(viewer: Viewer, now: number): Omit<Scope, "twin"> {
	const { account, user, role, description } = viewer;
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
export function isVisible(viewer: Viewer, twin: TwinView, now: number): boolean {
	const rule = ruleOf(viewer.twinRule);
	if (!rule) return twin.owner === viewer.account;
	return evaluate(rule, { ...scopeOf(viewer, now), twin: { ...twin, description: twin.description as Json } });
}

import type { Statement } from "../base/caller";

// The permission rule, with no I/O: callers turn the tagged reasons into HTTP answers.

export type Decision = { allowed: true } | { allowed: false; reason: "not_in_allow_list" | "in_deny_list" };

export function decide(statement: Statement, operation: string): Decision {
	const listed = statement.actions?.includes(operation) ?? false;
	if (statement.effect === "allow") {
		return listed ? { allowed: true } : { allowed: false, reason: "not_in_allow_list" };
	}
	return listed ? { allowed: false, reason: "in_deny_list" } : { allowed: true };
}

export function allowedActions(statement: Statement, vocabulary: readonly string[]): string[] {
	return vocabulary.filter((name) => decide(statement, name).allowed);
}

export type Grant = { ok: true } | { ok: false; reason: "escalation"; actions: string[] };

// How a refusal names the operations a `deny` statement allows beyond today's vocabulary.
export const LATER_OPERATIONS = "(every operation added later)";

// A caller may hand out a statement only when it allows nothing the caller's own does not,
// now or later: `deny` also allows every operation the service gains, which an `allow` list
// never does, so a caller allowing every operation by name still may not hand out `deny`.
export function checkGrant(caller: Statement, granted: Statement, vocabulary: readonly string[]): Grant {
	const extra = allowedActions(granted, vocabulary).filter((name) => !decide(caller, name).allowed);
	if (granted.effect === "deny" && caller.effect === "allow") extra.push(LATER_OPERATIONS);
	return extra.length === 0 ? { ok: true } : { ok: false, reason: "escalation", actions: extra };
}

import type { Caller } from "../base/caller";
import type { Json } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { ruleOf } from "./stored";
import { Budget, WORK_UNITS, withinBudget } from "./strings";
import { scopeOf, type TwinView } from "./visibility";

export type IdentityView = { identity: string; account: string; visibility: string | null; validity_ts: number | null };

export function isExpired(item: Pick<IdentityView, "validity_ts">, now: number) {
	return item.validity_ts !== null && item.validity_ts <= now;
}

// The reader's own account's identities are visible unless its role's identity rule says no.
// Another account's identity needs a role rule that accepts it and its own visibility rule,
// both evaluated with the reader as USER; a private, or expired, one is never shown. A role
// without an identity rule sees its own account's identities only. Rules that need more work
// than `budget` (the request's, when it decides on many) allow nothing, as in isVisible.
export function canSeeIdentity(
	caller: Caller,
	item: IdentityView,
	twin: TwinView,
	now: number,
	budget = new Budget(WORK_UNITS),
): boolean {
	return withinBudget(() => seesIdentity(caller, item, twin, now, budget), false);
}

function seesIdentity(caller: Caller, item: IdentityView, twin: TwinView, now: number, budget: Budget): boolean {
	const personal = item.account === caller.account;
	if (!personal && (item.visibility === null || isExpired(item, now))) return false;
	const role = ruleOf(caller.rules.identity);
	if (!role) return personal;
	const scope: Scope = {
		...scopeOf(caller, now),
		twin: { ...twin, description: twin.description as Json },
		identity: item.identity,
		budget,
	};
	if (!evaluate(role, scope)) return false;
	if (personal) return true;
	const visibility = ruleOf(item.visibility);
	return visibility !== null && evaluate(visibility, scope);
}

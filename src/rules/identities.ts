import type { Caller } from "../http/auth";
import type { Json } from "./ast";
import { evaluate, type Scope } from "./evaluate";
import { ruleOf } from "./visibility";

// Who reads an identity, as the identity rules see it.
export type IdentityReader = Pick<Caller, "account" | "user" | "role" | "description"> & { identityRule: string | null };

export function readerOf(caller: Caller): IdentityReader {
	const { account, user, role, description } = caller;
	return { account, user, role, description, identityRule: caller.rules.identity };
}

export type IdentityView = { identity: string; account: string; visibility: string | null; validity_ts: number | null };
type TwinView = { uuid: string; owner: string; status: string; description: unknown };

export function isExpired(item: Pick<IdentityView, "validity_ts">, now: number) {
	return item.validity_ts !== null && item.validity_ts <= now;
}

// The reader's own account's identities are visible unless its role's identity rule says no.
// Another account's identity needs a role rule that accepts it and its own visibility rule,
// both evaluated with the reader as USER; a private, or expired, one is never shown. A role
// without an identity rule sees its own account's identities only.
export function canSeeIdentity(reader: IdentityReader, item: IdentityView, twin: TwinView, now: number): boolean {
	const personal = item.account === reader.account;
	if (!personal && (item.visibility === null || isExpired(item, now))) return false;
	const role = ruleOf(reader.identityRule);
	if (!role) return personal;
	const { account, user, role: roleId, description } = reader;
	const scope: Scope = {
		user: { account, user, role: roleId, description: description as Json },
		twin: { ...twin, description: twin.description as Json },
		identity: item.identity,
		now,
	};
	if (!evaluate(role, scope)) return false;
	if (personal) return true;
	const visibility = ruleOf(item.visibility);
	return visibility !== null && evaluate(visibility, scope);
}

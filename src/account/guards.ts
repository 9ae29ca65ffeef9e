import type { Database } from "../db/client";
import { findRole } from "../db/roles";
import { findUserWithRole } from "../db/users";
import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import { checkManageable, checkRoleGrant, describeRefusal, type Target, type Verdict } from "../policy/grant";
import { STATEMENT_VOCABULARY } from "../policy/vocabulary";

// The I/O around the pure policy (src/policy/): read what it decides on, turn its refusals
// into 403102. The account's serialized writes call these inside their step; a read-only
// operation may call them too.

// A refusal of the policy as the 403 the caller gets.
export function requireAllowed(verdict: Verdict, what: string) {
	if (!verdict.ok) throw new ApiError("escalation", { description: describeRefusal(verdict, what) });
}

export function requireRoleGrant(caller: Caller, role: Parameters<typeof checkRoleGrant>[1], what = "The role") {
	requireAllowed(checkRoleGrant(caller, role, STATEMENT_VOCABULARY), what);
}

export function requireManageable(caller: Caller, target: Target, what = "The user") {
	requireAllowed(checkManageable(caller, target, STATEMENT_VOCABULARY), what);
}

// A role of the caller's account that the caller could have written itself. Another
// account's role answers as one that does not exist.
export async function grantableRole(db: Database, caller: Caller, uuid: string) {
	const found = await findRole(db, caller.account, uuid);
	if (!found) throw new ApiError("not_found", { description: "No such role" });
	requireRoleGrant(caller, found);
	return found;
}

// A user of the caller's account whom the caller may manage: anything done to it (a change,
// a PIN, its secret) could otherwise hand the caller, or the user, more than the caller has.
export async function manageableUser(db: Database, caller: Caller, uuid: string) {
	const found = await findUserWithRole(db, caller.account, uuid);
	if (!found) throw new ApiError("not_found", { description: "No such user" });
	requireManageable(caller, { uuid, role: found.role, description: found.user.description });
	return found;
}

import type { Database } from "../db/client";
import { findRole } from "../db/roles";
import type { Statement } from "../db/schema";
import { findUserWithStatement } from "../db/users";
import { ApiError } from "../http/errors";
import { checkGrant } from "../policy/statement";
import { OPERATION_NAMES } from "./names";

// Who is acting, with the statement of the role it holds right now.
export type Actor = { account: string; user: string; statement: Statement };

export function requireGrant(actor: Actor, statement: Statement, what: string) {
	const grant = checkGrant(actor.statement, statement, OPERATION_NAMES);
	if (!grant.ok) {
		throw new ApiError("escalation", `${what} allows actions the caller may not perform: ${grant.actions.join(", ")}`);
	}
}

// Giving a user a role is a grant: the role must belong to the actor's account and allow
// nothing the actor is not allowed itself.
export async function requireGrantableRole(db: Database, actor: Actor, role: string) {
	// Another account's role answers as one that does not exist.
	const found = await findRole(db, actor.account, role);
	if (!found) throw new ApiError("not_found", "No such role");
	requireGrant(actor, found.statement, "The role");
}

// Changing, deleting or issuing a PIN for a user whose role allows more than the actor's
// would hand the actor those extra powers (a PIN is a way into that user's account).
export async function requireManageableUser(db: Database, actor: Actor, user: string) {
	const found = await findUserWithStatement(db, actor.account, user);
	if (!found) throw new ApiError("not_found", "No such user");
	requireGrant(actor, found.statement, "The user's role");
	return found.user;
}

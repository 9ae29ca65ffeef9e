import { findRole } from "../db/roles";
import type { Statement } from "../db/schema";
import { findUserWithStatement } from "../db/users";
import type { Caller } from "../http/auth";
import { ApiError } from "../http/errors";
import { checkGrant } from "../policy/statement";
import { OPERATION_NAMES } from "./names";
import type { Context } from "./operation";

function requireGrant(caller: Caller, statement: Statement, what: string) {
	const grant = checkGrant(caller.statement, statement, OPERATION_NAMES);
	if (!grant.ok) {
		throw new ApiError("escalation", `${what} allows actions the caller may not perform: ${grant.actions.join(", ")}`);
	}
}

// Giving a user a role is a grant: the role must belong to the caller's account and allow
// nothing the caller is not allowed itself.
export async function requireGrantableRole(ctx: Context, caller: Caller, role: string) {
	const found = await findRole(ctx.db, caller.account, role);
	if (!found) {
		throw new ApiError("validation", "role: No such role in this account", [
			{ path: "role", message: "No such role in this account" },
		]);
	}
	requireGrant(caller, found.statement, "The role");
}

// Changing, deleting or issuing a PIN for a user whose role allows more than the caller's
// would hand the caller those extra powers (a PIN is a way into that user's account).
export async function requireManageableUser(ctx: Context, caller: Caller, user: string) {
	const found = await findUserWithStatement(ctx.db, caller.account, user);
	if (!found) throw new ApiError("not_found", "No such user");
	requireGrant(caller, found.statement, "The user's role");
	return found.user;
}

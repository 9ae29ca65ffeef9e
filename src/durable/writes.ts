import type { Database } from "../db/client";
import { countRoles, deleteUnheldRole, findRole, insertRole, patchRole } from "../db/roles";
import type { Description, RoleRules, Statement } from "../db/schema";
import { countUsers, findUserWithStatement, insertUser, patchUser } from "../db/users";
import { ApiError } from "../http/errors";
import { type Actor, requireGrant, requireGrantableRole, requireManageableUser } from "../operations/guards";
import { now } from "../time";

// The account's role writes and role assignments. AccountDO runs them one at a time, so an
// escalation check and the write it guards cannot interleave with another role write.

export type RoleInput = { name: string; rules: RoleRules; statement: Statement };
export type UserInput = { name: string; role: string; description: Description };
export type Principal = { account: string; user: string };
// Per-account limits (wrangler.toml vars). Writes run one at a time here, so a count and
// the insert after it cannot interleave with another create.
export type Limits = { roles: number; users: number };

// The caller's statement is read again here, inside the serialized section: a role changed a
// moment ago by another request counts.
export async function actorFor(db: Database, caller: Principal): Promise<Actor> {
	const found = await findUserWithStatement(db, caller.account, caller.user);
	if (!found) throw new ApiError("unknown_credential");
	return { ...caller, statement: found.statement };
}

export async function createRole(db: Database, actor: Actor, input: RoleInput, limits: Limits) {
	requireGrant(actor, input.statement, "The statement");
	if ((await countRoles(db, actor.account)) >= limits.roles) {
		throw new ApiError("role_limit", `The account already has ${limits.roles} roles, its limit (MAX_ROLES)`);
	}
	const at = now();
	return insertRole(db, { uuid: crypto.randomUUID(), account: actor.account, ...input, created_ts: at, updated_ts: at });
}

async function manageableRole(db: Database, actor: Actor, uuid: string) {
	const role = await findRole(db, actor.account, uuid);
	if (!role) throw new ApiError("not_found", "No such role");
	requireGrant(actor, role.statement, "The role");
	return role;
}

export async function updateRole(db: Database, actor: Actor, uuid: string, changes: Partial<RoleInput>) {
	await manageableRole(db, actor, uuid);
	if (changes.statement) requireGrant(actor, changes.statement, "The statement");
	const updated = await patchRole(db, actor.account, uuid, changes, now());
	if (!updated) throw new ApiError("not_found", "No such role");
	return updated;
}

export async function deleteRole(db: Database, actor: Actor, uuid: string) {
	const role = await manageableRole(db, actor, uuid);
	const deleted = await deleteUnheldRole(db, actor.account, uuid);
	if (!deleted) throw new ApiError("conflict", "The role is held by at least one user");
	return { ...role, ...deleted };
}

export async function createUser(db: Database, actor: Actor, input: UserInput, limits: Limits) {
	await requireGrantableRole(db, actor, input.role);
	if ((await countUsers(db, actor.account)) >= limits.users) {
		throw new ApiError("user_limit", `The account already has ${limits.users} users, its limit (MAX_USERS)`);
	}
	const at = now();
	return insertUser(db, { uuid: crypto.randomUUID(), account: actor.account, ...input, created_ts: at, updated_ts: at });
}

export async function updateUser(db: Database, actor: Actor, uuid: string, changes: Partial<UserInput>) {
	await requireManageableUser(db, actor, uuid);
	if (changes.role) await requireGrantableRole(db, actor, changes.role);
	const updated = await patchUser(db, actor.account, uuid, changes, now());
	if (!updated) throw new ApiError("not_found", "No such user");
	return updated;
}

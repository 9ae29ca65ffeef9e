import type { Database } from "../db/client";
import { sibling } from "../base/shards";
import { countRoles, deleteUnheldRole, insertRole, patchRole } from "../db/roles";
import type { Description, RoleRules, Statement } from "../db/schema";
import {
	countUsers,
	endUserSubscriptions,
	findUserWithRole,
	insertUser,
	listHolders,
	patchUser,
	removeUser,
} from "../db/users";
import { rowScoped } from "../rules/reader-filter";
import { ApiError } from "../base/errors";
import { grantableRole, manageableUser, requireManageable, requireRoleGrant } from "./guards";
import type { Caller } from "../base/caller";
import { isAdministrator, mayChangeOwnDescription } from "../policy/grant";
import { now } from "../base/time";
import { mergePatch } from "../base/merge-patch";
import { type Json, jsonBytes } from "../base/json";
import { descriptionTooLarge, MAX_DESCRIPTION_BYTES } from "../base/limits";

// The account's role and user writes. AccountDO runs them one at a time, so a check and the
// write it guards cannot interleave with another write.

export type RoleInput = { name: string; rules: RoleRules; statement: Statement };
// A role's change: rules merge by kind (null clears all three) and the statement by member
// (`effect` and `actions` each replace). A replacement gives all of each; a merge patch (RFC
// 7396) what it names.
export type RolePatch = { name?: string; rules?: Partial<RoleRules> | null; statement?: Partial<Statement> };
export type UserInput = {
	name: string;
	role: string;
	description: Description;
	activity: Record<string, never> | null;
};
// Per-account limits (wrangler.toml vars). Writes run one at a time here, so a count and
// the insert after it cannot interleave with another create.
export type Limits = { roles: number; users: number };

// The caller's role and description are read again here, inside the serialized section: a
// change made a moment ago by another request counts.
// The request's dictionary and credential come with it: they are the request's, not stored.
export async function currentCaller(
	db: Database,
	caller: Pick<Caller, "account" | "user" | "dict" | "credential">,
): Promise<Caller> {
	const found = await findUserWithRole(db, caller.account, caller.user);
	if (!found) throw new ApiError("unknown_credential");
	const { role, user } = found;
	const { account, dict, credential } = caller;
	return {
		account,
		user: caller.user,
		role: role.uuid,
		statement: role.statement,
		rules: role.rules,
		description: user.description,
		dict,
		credential,
	};
}

export async function createRole(db: Database, caller: Caller, input: RoleInput, limits: Limits) {
	requireRoleGrant(caller, input, "The new role");
	if ((await countRoles(db, caller.account)) >= limits.roles) {
		throw new ApiError("role_limit", {
			description: `The account already has ${limits.roles} roles, its limit (MAX_ROLES)`,
		});
	}
	const at = now();
	return insertRole(db, {
		uuid: sibling(caller.account),
		account: caller.account,
		...input,
		created_ts: at,
		updated_ts: at,
	});
}

export async function updateRole(db: Database, caller: Caller, uuid: string, patch: RolePatch) {
	const role = await grantableRole(db, caller, uuid);
	const changes: Partial<RoleInput> = {};
	if (patch.name !== undefined) changes.name = patch.name;
	if (patch.rules !== undefined)
		changes.rules = { ...role.rules, ...(patch.rules ?? { twin: null, entry: null, identity: null }) };
	if (patch.statement !== undefined) changes.statement = { ...role.statement, ...patch.statement };
	// The checks see the role as it becomes, every rule and the statement whole, whatever the
	// patch named: a patch of one rule must not slip the others past them.
	if (changes.statement || changes.rules) {
		const changed = { uuid, statement: changes.statement ?? role.statement, rules: changes.rules ?? role.rules };
		requireRoleGrant(caller, changed, "The changed role");
		// Its holders get the change: none of them may end up seeing what the caller does not.
		if (!isAdministrator(caller)) {
			for (const holder of await listHolders(db, caller.account, uuid)) {
				requireManageable(
					caller,
					{ uuid: holder.uuid, role: changed, description: holder.description },
					"A holder of the role",
				);
			}
		}
	}
	const updated = await patchRole(db, caller.account, uuid, changes, now());
	if (!updated) throw new ApiError("not_found", { description: "No such role" });
	return updated;
}

export async function deleteRole(db: Database, caller: Caller, uuid: string) {
	const role = await grantableRole(db, caller, uuid);
	const deleted = await deleteUnheldRole(db, caller.account, uuid);
	if (!deleted)
		throw new ApiError("conflict", {
			description: "The role is held by at least one user, or given by an identity provider that provisions users",
		});
	return { ...role, ...deleted };
}

export async function createUser(db: Database, caller: Caller, input: UserInput, limits: Limits) {
	const role = await grantableRole(db, caller, input.role);
	const uuid = sibling(caller.account);
	requireManageable(caller, { uuid, role, description: input.description }, "The new user");
	if ((await countUsers(db, caller.account)) >= limits.users) {
		throw new ApiError("user_limit", {
			description: `The account already has ${limits.users} users, its limit (MAX_USERS)`,
		});
	}
	const at = now();
	return insertUser(db, { uuid, account: caller.account, ...input, created_ts: at, updated_ts: at });
}

// `merge`: the description given is a merge patch (RFC 7396) of the stored one, merged here,
// in the step that checks and writes it, so the checks see the description the user gets.
export async function updateUser(
	db: Database,
	caller: Caller,
	uuid: string,
	changes: Partial<UserInput>,
	merge: boolean,
) {
	const current = await manageableUser(db, caller, uuid);
	if (uuid === caller.user && changes.description !== undefined && !mayChangeOwnDescription(caller)) {
		throw new ApiError("escalation", {
			description:
				"The caller's description decides what it sees (its role's rules or other accounts' visibility rules read it): only the administrator may change it",
		});
	}
	const role = changes.role ? await grantableRole(db, caller, changes.role) : current.role;
	const written =
		merge && changes.description !== undefined
			? { ...changes, description: mergedDescription(current.user.description, changes.description) }
			: changes;
	const description = written.description ?? current.user.description;
	requireManageable(caller, { uuid, role, description }, "The changed user");
	const updated = await patchUser(db, caller.account, uuid, written, now());
	if (!updated) throw new ApiError("not_found", { description: "No such user" });
	return updated;
}

// A description patch merged into the stored description, held to the limit a description
// sent whole meets in validation.
function mergedDescription(stored: Description, patch: Description): Description {
	const merged = mergePatch(stored as Json, patch as Json) as Description;
	if (jsonBytes(merged) > MAX_DESCRIPTION_BYTES) throw descriptionTooLarge();
	return merged;
}

// `elsewhere`: every database but the account's own.
export async function deleteUser(db: Database, caller: Caller, uuid: string, elsewhere: { db: Database }[]) {
	// Deleting oneself would leave the caller locked out mid-session; another user must do it.
	if (uuid === caller.user) throw new ApiError("conflict", { description: "A user cannot delete itself" });
	const { role } = await manageableUser(db, caller, uuid);
	// A user whose role confines what it sees leaves no subscription behind: with no reader, its
	// messages could not be filtered. Those to other accounts' topics are kept in their
	// publishers' databases, which no batch of this one can reach: they end first, every
	// database asked at once whatever it holds, and the user goes after. A failure on the way
	// leaves the user in place for the delete to be tried again, which ends what is left.
	const scoped = rowScoped(role);
	if (scoped) await Promise.all(elsewhere.map((other) => endUserSubscriptions(other.db, caller.account, uuid)));
	const deleted = await removeUser(db, caller.account, uuid, scoped);
	if (!deleted) throw new ApiError("not_found", { description: "No such user" });
	return deleted;
}

import type { Database } from "../db/client";
import { sibling } from "../base/shards";
import * as federation from "../db/federation";
import { findRole } from "../db/roles";
import { countUsers } from "../db/users";
import { userExternalIds, users } from "../db/schema";
import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import { isAdministrator } from "../policy/grant";
import { now } from "../base/time";
import { manageableUser } from "./guards";

// The account's identity providers and the links from their subjects to its users
// (docs/sign-in.md), written in AccountDO's serialized step with the role and user writes: a
// check and the write it guards cannot interleave with another write.

export type ProviderInput = Omit<federation.ProviderRow, "uuid" | "account" | "created_ts" | "updated_ts">;

// A provider's keys are a credential for every user it maps: only the administrator (allowed
// everything, no rule: docs/permission-model.md) manages them.
function requireAdministrator(caller: Caller) {
	if (!isAdministrator(caller)) {
		throw new ApiError("escalation", {
			description:
				"Only the account's administrator (a role allowing everything, without rules) manages identity providers",
		});
	}
}

async function requireProvisioningRole(db: Database, account: string, role: string | null) {
	if (role !== null && !(await findRole(db, account, role)))
		throw new ApiError("not_found", { description: "No such role (provisioning.role)" });
}

export async function createProvider(db: Database, caller: Caller, input: ProviderInput, limit: number) {
	requireAdministrator(caller);
	await requireProvisioningRole(db, caller.account, input.provisioning_role);
	if (await federation.findProviderByIssuer(db, caller.account, input.issuer)) {
		throw new ApiError("conflict", { description: "The account already trusts a provider with this issuer" });
	}
	if ((await federation.countProviders(db, caller.account)) >= limit) {
		throw new ApiError("identity_provider_limit", {
			description: `The account already has ${limit} identity providers, its limit (MAX_IDENTITY_PROVIDERS)`,
		});
	}
	const at = now();
	return federation.insertProvider(db, {
		uuid: sibling(caller.account),
		account: caller.account,
		...input,
		created_ts: at,
		updated_ts: at,
	});
}

// The given fields replace the stored ones. updated_ts always moves on, even within one
// millisecond of the last change: the tokens an exchange gave before end with it.
export async function updateProvider(db: Database, caller: Caller, uuid: string, changes: Partial<ProviderInput>) {
	requireAdministrator(caller);
	const found = await federation.findProvider(db, caller.account, uuid);
	if (!found) throw new ApiError("not_found", { description: "No such identity provider" });
	const changed = {
		...found,
		...changes,
		updated_ts: Math.max(now(), Math.round((found.updated_ts + 0.001) * 1000) / 1000),
	};
	if (changes.provisioning_role !== undefined)
		await requireProvisioningRole(db, caller.account, changed.provisioning_role);
	if (
		changes.issuer !== undefined &&
		changes.issuer !== found.issuer &&
		(await federation.findProviderByIssuer(db, caller.account, changes.issuer))
	) {
		throw new ApiError("conflict", { description: "The account already trusts a provider with this issuer" });
	}
	const updated = await federation.replaceProvider(db, changed);
	if (!updated) throw new ApiError("not_found", { description: "No such identity provider" });
	return updated;
}

export async function deleteProvider(db: Database, caller: Caller, uuid: string) {
	requireAdministrator(caller);
	// Found first, as another account's provider is not (db/scoped.ts): the delete reads by key.
	if (!(await federation.findProvider(db, caller.account, uuid)))
		throw new ApiError("not_found", { description: "No such identity provider" });
	const deleted = await federation.deleteProvider(db, caller.account, uuid);
	if (!deleted) throw new ApiError("not_found", { description: "No such identity provider" });
	return deleted;
}

// Who may touch a user's links: the user itself, or a caller that could manage it
// (docs/permission-model.md). Another account's user is not found.
export async function linkableUser(db: Database, caller: Caller, user: string) {
	if (user !== caller.user) await manageableUser(db, caller, user);
}

// `proven`: the subject comes from an ID token the caller gave and the service verified. A user
// other than the administrator links itself only so: else it could take a colleague's
// unlinked subject and sign in as itself with the colleague's ID token.
export async function createLink(
	db: Database,
	caller: Caller,
	user: string,
	link: { provider: string; subject: string; proven: boolean },
) {
	if (caller.credential?.type !== "secret") {
		throw new ApiError("credential_forbidden", {
			description: "A link outlives the token: make it with a User Secret",
		});
	}
	await linkableUser(db, caller, user);
	if (user === caller.user && !link.proven && !isAdministrator(caller)) {
		throw new ApiError("escalation", {
			description: "A user links itself with subject_token, an ID token of the subject, not with subject",
		});
	}
	if (!(await federation.findProvider(db, caller.account, link.provider)))
		throw new ApiError("not_found", { description: "No such identity provider" });
	if (await federation.findLink(db, link.provider, link.subject))
		throw new ApiError("conflict", { description: "The subject is already linked to a user" });
	if (await federation.findUserLink(db, caller.account, user, link.provider))
		throw new ApiError("conflict", { description: "The user is already linked at this provider" });
	return federation.insertLink(db, {
		uuid: sibling(caller.account),
		account: caller.account,
		user,
		provider: link.provider,
		subject: link.subject,
		created_ts: now(),
	});
}

export async function deleteLink(db: Database, caller: Caller, user: string, provider: string) {
	await linkableUser(db, caller, user);
	const deleted = await federation.deleteLink(db, caller.account, user, provider);
	if (!deleted) throw new ApiError("not_found", { description: "The user has no link at this provider" });
	return deleted;
}

export type Provisioning = {
	account: string;
	provider: string;
	version: number;
	subject: string;
	role: string;
	name: string;
};

// A user made for a subject the provider vouched for: the user (its role, its name, no secret)
// and its link in one batch. Run one at a time, so concurrent exchanges of one new subject make
// one user; the provider must still be as the exchange verified it.
export async function provision(db: Database, p: Provisioning, maxUsers: number) {
	const linked = await federation.findLinkedUser(db, p.provider, p.subject);
	if (linked) return { link: linked.link, user: linked.user, statement: linked.statement, provisioned: false };
	const provider = await federation.findProvider(db, p.account, p.provider);
	if (
		!provider ||
		Math.round(provider.updated_ts * 1000) !== Math.round(p.version * 1000) ||
		provider.provisioning_role !== p.role
	) {
		throw new ApiError("untrusted_token");
	}
	const role = await findRole(db, p.account, p.role);
	if (!role) throw new ApiError("untrusted_token");
	if ((await countUsers(db, p.account)) >= maxUsers) {
		throw new ApiError("user_limit", {
			description: `The account already has ${maxUsers} users, its limit (MAX_USERS)`,
		});
	}
	const at = now();
	const user = sibling(p.account);
	const link = {
		uuid: sibling(p.account),
		account: p.account,
		user,
		provider: p.provider,
		subject: p.subject,
		created_ts: at,
	};
	await db.batch([
		db.insert(users).values({
			uuid: user,
			account: p.account,
			name: p.name,
			role: p.role,
			description: {},
			activity: null,
			created_ts: at,
			updated_ts: at,
		}),
		db.insert(userExternalIds).values(link),
	]);
	return { link: link.uuid, user, statement: role.statement, provisioned: true };
}

import { and, eq } from "drizzle-orm";
import type { Database } from "./client";
import { byAccountIndex, columnsOf } from "./scoped";
import { identityProviders, roles, userExternalIds, users } from "./schema";

// The identity providers an account trusts and the links from their subjects to its users
// (docs/sign-in.md). Every read names the account: another account's provider or link is
// not found.

export type ProviderRow = typeof identityProviders.$inferSelect;
export type LinkRow = typeof userExternalIds.$inferSelect;

export async function findProvider(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select(columnsOf(identityProviders))
		.from(byAccountIndex(identityProviders, "identity_providers_account"))
		.where(and(eq(identityProviders.account, account), eq(identityProviders.uuid, uuid)))
		.limit(1);
	return row;
}

// The exchange's one read before verification: the provider an account has for an issuer.
export async function findProviderByIssuer(db: Database, account: string, issuer: string) {
	const [row] = await db
		.select()
		.from(identityProviders)
		.where(and(eq(identityProviders.account, account), eq(identityProviders.issuer, issuer)))
		.limit(1);
	return row;
}

export function listProviders(db: Database, account: string) {
	return db
		.select({
			uuid: identityProviders.uuid,
			issuer: identityProviders.issuer,
			created_ts: identityProviders.created_ts,
			updated_ts: identityProviders.updated_ts,
		})
		.from(identityProviders)
		.where(eq(identityProviders.account, account))
		.orderBy(identityProviders.uuid);
}

export function countProviders(db: Database, account: string) {
	return db.$count(identityProviders, eq(identityProviders.account, account));
}

export async function insertProvider(db: Database, row: ProviderRow) {
	await db.insert(identityProviders).values(row);
	return row;
}

export async function replaceProvider(db: Database, row: ProviderRow) {
	const { uuid, account, ...changes } = row;
	const [updated] = await db
		.update(identityProviders)
		.set(changes)
		.where(and(eq(identityProviders.account, account), eq(identityProviders.uuid, uuid)))
		.returning();
	return updated;
}

// The provider and every link made through it, in one batch.
export async function deleteProvider(db: Database, account: string, uuid: string) {
	const [, deleted] = await db.batch([
		db.delete(userExternalIds).where(and(eq(userExternalIds.account, account), eq(userExternalIds.provider, uuid))),
		db
			.delete(identityProviders)
			.where(and(eq(identityProviders.account, account), eq(identityProviders.uuid, uuid)))
			.returning(),
	]);
	return deleted[0];
}

export async function findLink(db: Database, provider: string, subject: string) {
	const [row] = await db
		.select()
		.from(userExternalIds)
		.where(and(eq(userExternalIds.provider, provider), eq(userExternalIds.subject, subject)))
		.limit(1);
	return row;
}

export async function findUserLink(db: Database, account: string, user: string, provider: string) {
	const [row] = await db
		.select()
		.from(userExternalIds)
		.where(
			and(eq(userExternalIds.account, account), eq(userExternalIds.user, user), eq(userExternalIds.provider, provider)),
		)
		.limit(1);
	return row;
}

export function listUserLinks(db: Database, account: string, user: string) {
	return db
		.select()
		.from(userExternalIds)
		.where(and(eq(userExternalIds.account, account), eq(userExternalIds.user, user)))
		.orderBy(userExternalIds.provider);
}

export async function insertLink(db: Database, row: LinkRow) {
	await db.insert(userExternalIds).values(row);
	return row;
}

export async function deleteLink(db: Database, account: string, user: string, provider: string) {
	const [row] = await db
		.delete(userExternalIds)
		.where(
			and(eq(userExternalIds.account, account), eq(userExternalIds.user, user), eq(userExternalIds.provider, provider)),
		)
		.returning();
	return row;
}

// The users linked through a provider: their streams end when it changes.
export function linkedUsers(db: Database, account: string, provider: string) {
	return db
		.select({ user: userExternalIds.user })
		.from(userExternalIds)
		.where(and(eq(userExternalIds.account, account), eq(userExternalIds.provider, provider)));
}

// The exchange's one read after verification: the user linked to a subject, with its role's
// statement (the exchange is refused when the role does not allow it).
export async function findLinkedUser(db: Database, provider: string, subject: string) {
	const [row] = await db
		.select({
			link: userExternalIds.uuid,
			user: userExternalIds.user,
			account: userExternalIds.account,
			statement: roles.statement,
		})
		.from(userExternalIds)
		.innerJoin(users, eq(users.uuid, userExternalIds.user))
		.innerJoin(roles, eq(roles.uuid, users.role))
		.where(and(eq(userExternalIds.provider, provider), eq(userExternalIds.subject, subject)))
		.limit(1);
	return row;
}

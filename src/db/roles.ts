import { and, eq, inArray, notExists } from "drizzle-orm";
import type { Database } from "./client";
import { identityProviders, type RoleRules, roles, secretPins, type Statement, users } from "./schema";
import { byAccountIndex, columnsOf } from "./scoped";

export type RoleRow = typeof roles.$inferSelect;

export async function findRole(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select(columnsOf(roles))
		.from(byAccountIndex(roles, "roles_account"))
		.where(and(eq(roles.account, account), eq(roles.uuid, uuid)))
		.limit(1);
	return row;
}

export function countRoles(db: Database, account: string) {
	return db.$count(roles, eq(roles.account, account));
}

export function listRoles(db: Database, account: string) {
	return db.select().from(roles).where(eq(roles.account, account)).orderBy(roles.uuid);
}

export async function insertRole(db: Database, row: RoleRow) {
	await db.insert(roles).values(row);
	return row;
}

export async function patchRole(
	db: Database,
	account: string,
	uuid: string,
	changes: Partial<{ name: string; rules: RoleRules; statement: Statement }>,
	updated_ts: number,
) {
	const update = db
		.update(roles)
		.set({ ...changes, updated_ts })
		.where(and(eq(roles.account, account), eq(roles.uuid, uuid)))
		.returning();
	if (changes.rules === undefined && changes.statement === undefined) return (await update)[0];
	// A changed role changes what its holders' pending PINs would redeem into: they go too.
	const holders = db
		.select({ uuid: users.uuid })
		.from(users)
		.where(and(eq(users.role, uuid), eq(users.account, account)));
	const [, rows] = await db.batch([
		db.delete(secretPins).where(and(eq(secretPins.account, account), inArray(secretPins.user, holders))),
		update,
	]);
	return rows[0];
}

// One statement, so no user can be given the role between the check and the delete.
export async function deleteUnheldRole(db: Database, account: string, uuid: string) {
	const [row] = await db
		.delete(roles)
		.where(
			and(
				eq(roles.account, account),
				eq(roles.uuid, uuid),
				notExists(db.select({ one: users.uuid }).from(users).where(eq(users.role, uuid))),
				// A provider that provisions users with the role holds it too.
				notExists(
					db
						.select({ one: identityProviders.uuid })
						.from(identityProviders)
						.where(eq(identityProviders.provisioning_role, uuid)),
				),
			),
		)
		.returning();
	return row;
}

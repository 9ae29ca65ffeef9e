import { and, eq, notExists } from "drizzle-orm";
import type { Database } from "./client";
import { type RoleRules, roles, type Statement, users } from "./schema";

export type RoleRow = typeof roles.$inferSelect;

export async function findRole(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select()
		.from(roles)
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
	const [row] = await db
		.update(roles)
		.set({ ...changes, updated_ts })
		.where(and(eq(roles.account, account), eq(roles.uuid, uuid)))
		.returning();
	return row;
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
			),
		)
		.returning();
	return row;
}

import { and, eq } from "drizzle-orm";
import type { Database } from "./client";
import { type Description, roles, secretPins, userSecrets, users } from "./schema";

export type UserRow = typeof users.$inferSelect;

// Every lookup is scoped by account: a user of another account is simply not found.
export async function findUser(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select()
		.from(users)
		.where(and(eq(users.account, account), eq(users.uuid, uuid)))
		.limit(1);
	return row;
}

export function listUsers(db: Database, account: string) {
	return db.select().from(users).where(eq(users.account, account)).orderBy(users.uuid);
}

export function countUsers(db: Database, account: string) {
	return db.$count(users, eq(users.account, account));
}

export async function insertUser(db: Database, row: UserRow) {
	await db.insert(users).values(row);
	return row;
}

export async function patchUser(
	db: Database,
	account: string,
	uuid: string,
	changes: Partial<{ name: string; role: string; description: Description }>,
	updated_ts: number,
) {
	const [row] = await db
		.update(users)
		.set({ ...changes, updated_ts })
		.where(and(eq(users.account, account), eq(users.uuid, uuid)))
		.returning();
	return row;
}

// The user, its secret and its PINs go together in one transaction.
export async function removeUser(db: Database, account: string, uuid: string) {
	const [, , deleted] = await db.batch([
		db.delete(secretPins).where(and(eq(secretPins.account, account), eq(secretPins.user, uuid))),
		db.delete(userSecrets).where(and(eq(userSecrets.account, account), eq(userSecrets.user, uuid))),
		db
			.delete(users)
			.where(and(eq(users.account, account), eq(users.uuid, uuid)))
			.returning(),
	]);
	return deleted[0];
}

// The user together with its role's statement, for the checks that guard managing it.
export async function findUserWithStatement(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select({ user: users, statement: roles.statement })
		.from(users)
		.innerJoin(roles, eq(roles.uuid, users.role))
		.where(and(eq(users.account, account), eq(users.uuid, uuid)))
		.limit(1);
	return row;
}

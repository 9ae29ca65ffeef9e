import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "./client";
import { type Description, roles, secretPins, subscriptions, userExternalIds, userSecrets, users } from "./schema";
import { byAccountIndex, columnsOf } from "./scoped";
import { ENDED_SUBSCRIPTION } from "./subscriptions";

export type UserRow = typeof users.$inferSelect;

// Every lookup is scoped by account: a user of another account is simply not found.
export async function findUser(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select(columnsOf(users))
		.from(byAccountIndex(users, "users_account"))
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

// A PIN issued before a change of role or description would redeem into the new powers, so
// the user's unredeemed PINs go in the same batch as such a change.
export async function patchUser(
	db: Database,
	account: string,
	uuid: string,
	changes: Partial<{ name: string; role: string; description: Description; activity: Record<string, never> | null }>,
	updated_ts: number,
) {
	const update = db
		.update(users)
		.set({ ...changes, updated_ts })
		.where(and(eq(users.account, account), eq(users.uuid, uuid)))
		.returning();
	if (changes.role === undefined && changes.description === undefined) return (await update)[0];
	const [, rows] = await db.batch([
		db.delete(secretPins).where(and(eq(secretPins.account, account), eq(secretPins.user, uuid))),
		update,
	]);
	return rows[0];
}

// Ends the user's live webhook subscriptions in `db` (one database of those holding them).
export function endUserSubscriptions(db: Database, account: string, uuid: string) {
	return db
		.update(subscriptions)
		.set(ENDED_SUBSCRIPTION)
		.where(
			and(
				eq(subscriptions.account, account),
				eq(subscriptions.user, uuid),
				inArray(subscriptions.status, ["pending", "confirmed"]),
			),
		);
}

// The user, its secret and its PINs go together in one transaction.
// `unsubscribe`: the user's live webhook subscriptions in this database end in the same batch.
export async function removeUser(db: Database, account: string, uuid: string, unsubscribe = false) {
	const [, , , deleted] = await db.batch([
		db.delete(secretPins).where(and(eq(secretPins.account, account), eq(secretPins.user, uuid))),
		db.delete(userSecrets).where(and(eq(userSecrets.account, account), eq(userSecrets.user, uuid))),
		// Its links go with it: a subject linked again later makes another link.
		db.delete(userExternalIds).where(and(eq(userExternalIds.account, account), eq(userExternalIds.user, uuid))),
		db
			.delete(users)
			.where(and(eq(users.account, account), eq(users.uuid, uuid)))
			.returning(),
		...(unsubscribe ? [endUserSubscriptions(db, account, uuid)] : []),
	]);
	return deleted[0];
}

// The user together with its role, for the checks that guard managing it.
export async function findUserWithRole(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select({
			...columnsOf(users),
			statement: sql`${roles.statement}`.mapWith(roles.statement),
			rules: sql`${roles.rules}`.mapWith(roles.rules),
		})
		.from(byAccountIndex(users, "users_account"))
		.innerJoin(roles, eq(roles.uuid, users.role))
		.where(and(eq(users.account, account), eq(users.uuid, uuid)))
		.limit(1);
	if (!row) return undefined;
	const { statement, rules, ...user } = row;
	return { user, role: { uuid: user.role, statement, rules } };
}

// Who holds a role, with the descriptions its rules may read.
export function listHolders(db: Database, account: string, role: string) {
	return db
		.select({ uuid: users.uuid, description: users.description })
		.from(users)
		.where(and(eq(users.role, role), eq(users.account, account)));
}

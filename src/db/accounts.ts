import { eq } from "drizzle-orm";
import type { Database } from "./client";
import { accounts, roles, userSecrets, users } from "./schema";

type NewAccount = {
	account: typeof accounts.$inferInsert;
	role: typeof roles.$inferInsert;
	user: typeof users.$inferInsert;
	secret: typeof userSecrets.$inferInsert;
};

// All four rows or none: D1 runs a batch as one transaction.
export async function insertAccount(db: Database, rows: NewAccount) {
	await db.batch([
		db.insert(accounts).values(rows.account),
		db.insert(roles).values(rows.role),
		db.insert(users).values(rows.user),
		db.insert(userSecrets).values(rows.secret),
	]);
}

export function findAccount(db: Database, uuid: string) {
	return db
		.select({
			uuid: accounts.uuid,
			created_ts: accounts.created_ts,
			updated_ts: accounts.updated_ts,
			resource_access_log: accounts.resource_access_log,
		})
		.from(accounts)
		.where(eq(accounts.uuid, uuid))
		.get();
}

export function setResourceAccessLog(db: Database, uuid: string, value: Record<string, never> | null, at: number) {
	return db
		.update(accounts)
		.set({ resource_access_log: value, updated_ts: at })
		.where(eq(accounts.uuid, uuid))
		.returning({
			uuid: accounts.uuid,
			created_ts: accounts.created_ts,
			updated_ts: accounts.updated_ts,
			resource_access_log: accounts.resource_access_log,
		})
		.get();
}

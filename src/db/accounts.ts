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

import { eq } from "drizzle-orm";
import type { Database } from "./client";
import { roles, userSecrets, users } from "./schema";

// One query resolves a secret to its user and role, so authentication costs one D1 round trip.
// (No two selected columns share a name: see meter.ts.)
export async function findCredential(db: Database, hash: string) {
	const [row] = await db
		.select({
			account: users.account,
			user: users.uuid,
			role: users.role,
			statement: roles.statement,
			rules: roles.rules,
			description: users.description,
			validity_ts: userSecrets.validity_ts,
		})
		.from(userSecrets)
		.innerJoin(users, eq(users.uuid, userSecrets.user))
		.innerJoin(roles, eq(roles.uuid, users.role))
		.where(eq(userSecrets.hash, hash))
		.limit(1);
	return row;
}

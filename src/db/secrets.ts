import { and, eq, gt, sql } from "drizzle-orm";
import type { Database } from "./client";
import { secretPins, userSecrets, users } from "./schema";

export async function findSecret(db: Database, account: string, user: string) {
	const [row] = await db
		.select()
		.from(userSecrets)
		.where(and(eq(userSecrets.account, account), eq(userSecrets.user, user)))
		.limit(1);
	return row;
}

export async function setSecretValidity(
	db: Database,
	account: string,
	user: string,
	validity_ts: number | null,
	updated_ts: number,
) {
	const [row] = await db
		.update(userSecrets)
		.set({ validity_ts, updated_ts })
		.where(and(eq(userSecrets.account, account), eq(userSecrets.user, user)))
		.returning();
	return row;
}

export async function deleteSecret(db: Database, account: string, user: string) {
	const [row] = await db
		.delete(userSecrets)
		.where(and(eq(userSecrets.account, account), eq(userSecrets.user, user)))
		.returning();
	return row;
}

// A user has at most one pending PIN: asking again replaces it.
export async function replacePin(db: Database, pin: typeof secretPins.$inferInsert) {
	await db.batch([db.delete(secretPins).where(eq(secretPins.user, pin.user)), db.insert(secretPins).values(pin)]);
}

// Redeeming is one transaction: the secret is written from the PIN's row only while the PIN
// is unexpired and its user still exists, and the PIN is deleted with it. Two concurrent
// redemptions cannot both succeed, because the second finds the PIN gone.
export async function redeemPin(
	db: Database,
	pinHash: string,
	secret: { hash: string; fingerprint: string },
	at: number,
) {
	const [written] = await db.batch([
		db
			.insert(userSecrets)
			.select(
				db
					.select({
						user: secretPins.user,
						account: secretPins.account,
						hash: sql<string>`${secret.hash}`.as("hash"),
						fingerprint: sql<string>`${secret.fingerprint}`.as("fingerprint"),
						validity_ts: secretPins.secret_validity_ts,
						created_ts: sql<number>`${at}`.as("created_ts"),
						updated_ts: sql<number>`${at}`.as("updated_ts"),
					})
					.from(secretPins)
					.innerJoin(users, eq(users.uuid, secretPins.user))
					.where(and(eq(secretPins.hash, pinHash), gt(secretPins.expires_ts, at))),
			)
			.onConflictDoUpdate({
				target: userSecrets.user,
				set: {
					hash: sql`excluded.hash`,
					fingerprint: sql`excluded.fingerprint`,
					validity_ts: sql`excluded.validity_ts`,
					created_ts: sql`excluded.created_ts`,
					updated_ts: sql`excluded.updated_ts`,
				},
			})
			.returning(),
		db.delete(secretPins).where(eq(secretPins.hash, pinHash)),
	]);
	return written[0];
}

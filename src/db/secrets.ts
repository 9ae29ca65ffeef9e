import { and, eq, sql } from "drizzle-orm";
import type { Database } from "./client";
import { secretPins, userSecrets, users } from "./schema";

export type SecretRow = typeof userSecrets.$inferSelect;

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
	await db.batch([
		db.delete(secretPins).where(eq(secretPins.user, pin.user)),
		db.insert(secretPins).values(pin),
	]);
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
		db.run(sql`
			INSERT INTO ${userSecrets} (user, account, hash, fingerprint, validity_ts, created_ts, updated_ts)
			SELECT ${secretPins.user}, ${secretPins.account}, ${secret.hash}, ${secret.fingerprint},
				${secretPins.secret_validity_ts}, ${at}, ${at}
			FROM ${secretPins} JOIN ${users} ON ${users.uuid} = ${secretPins.user}
			WHERE ${secretPins.hash} = ${pinHash} AND ${secretPins.expires_ts} > ${at}
			ON CONFLICT (user) DO UPDATE SET hash = excluded.hash, fingerprint = excluded.fingerprint,
				validity_ts = excluded.validity_ts, created_ts = excluded.created_ts,
				updated_ts = excluded.updated_ts`),
		db.delete(secretPins).where(eq(secretPins.hash, pinHash)),
	]);
	if (written.meta.changes === 0) return undefined;
	return db.select().from(userSecrets).where(eq(userSecrets.hash, secret.hash)).get();
}

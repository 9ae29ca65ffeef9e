import { and, eq, getTableColumns, type SQL, sql } from "drizzle-orm";
import type { Database } from "./client";
import { subscriptions } from "./schema";

export type SubscriptionRow = typeof subscriptions.$inferSelect;
type Status = SubscriptionRow["status"];

// Inserts the row only while the account holds fewer than `limit` live subscriptions (pending
// or confirmed, unexpired), in one statement: two concurrent subscribes cannot both slip
// under the limit. Answers undefined when the limit is reached.
export async function insertSubscriptionWithin(db: Database, row: SubscriptionRow, limit: number, at: number) {
	// INSERT ... SELECT names every column of the table, in the table's order.
	const values: SQL[] = Object.entries(getTableColumns(subscriptions)).map(([key, column]) => {
		const value = (row as Record<string, unknown>)[key] ?? column.default ?? null;
		return value === null ? sql`NULL` : sql`${column.mapToDriverValue(value)}`;
	});
	const [inserted] = await db
		.insert(subscriptions)
		.select(
			sql`SELECT ${sql.join(values, sql`, `)} WHERE (
				SELECT count(*) FROM ${subscriptions}
				WHERE ${subscriptions.account} = ${row.account} AND ${subscriptions.status} IN ('pending', 'confirmed')
					AND ${subscriptions.validity_ts} > ${at}) < ${limit}`,
		)
		.returning();
	return inserted;
}

export async function findSubscription(db: Database, uuid: string) {
	const [row] = await db.select().from(subscriptions).where(eq(subscriptions.uuid, uuid)).limit(1);
	return row;
}

export async function deleteSubscription(db: Database, uuid: string) {
	await db.delete(subscriptions).where(eq(subscriptions.uuid, uuid));
}

export async function findByToken(db: Database, account: string, tokenHash: string) {
	const [row] = await db
		.select()
		.from(subscriptions)
		.where(and(eq(subscriptions.account, account), eq(subscriptions.token_hash, tokenHash)))
		.limit(1);
	return row;
}

export async function patchSubscription(
	db: Database,
	uuid: string,
	changes: Partial<Pick<SubscriptionRow, "status" | "validity_ts">>,
	at: number,
) {
	const [row] = await db
		.update(subscriptions)
		.set({ ...changes, updated_ts: at })
		.where(eq(subscriptions.uuid, uuid))
		.returning();
	return row;
}

// Every delivery attempt is counted and its outcome kept. A final failure changes the status
// only of a subscription still pending: one confirmed meanwhile stays confirmed.
export async function recordAttempt(
	db: Database,
	uuid: string,
	outcome: { text: string; kind: "delivered" | "permanent" | "retry" },
	at: number,
) {
	await db
		.update(subscriptions)
		.set({
			attempts: sql`${subscriptions.attempts} + 1`,
			last_attempt_ts: at,
			last_outcome: outcome.text,
			updated_ts: at,
			...(outcome.kind === "delivered" ? { delivered_ts: at } : {}),
			...(outcome.kind === "permanent"
				? { status: sql`CASE WHEN ${subscriptions.status} = 'pending' THEN 'failed' ELSE ${subscriptions.status} END` }
				: {}),
		})
		.where(eq(subscriptions.uuid, uuid));
}

export async function markFailed(db: Database, uuid: string, outcome: string, at: number) {
	await db
		.update(subscriptions)
		.set({ status: "failed" satisfies Status, last_outcome: outcome, updated_ts: at })
		.where(and(eq(subscriptions.uuid, uuid), eq(subscriptions.status, "pending")));
}

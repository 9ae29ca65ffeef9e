import { and, asc, eq, getTableColumns, gt, inArray, lte, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "./client";
import { subscriptions } from "./schema";

export type SubscriptionRow = typeof subscriptions.$inferSelect;
type Status = SubscriptionRow["status"];

// Inserts the row only while the account holds fewer than `limit` live subscriptions (pending
// or confirmed, unexpired), in one statement: two concurrent subscribes cannot both slip
// under the limit. `also` is a further condition that must hold when the row is written (a
// grant of another account's topic). Answers undefined when either fails.
export async function insertSubscriptionWithin(db: Database, row: SubscriptionRow, limit: number, at: number, also?: SQL) {
	// INSERT ... SELECT names every column of the table, in the table's order.
	const values: SQL[] = Object.entries(getTableColumns(subscriptions)).map(([key, column]) => {
		const value = (row as Record<string, unknown>)[key] ?? column.default ?? null;
		return value === null ? sql`NULL` : sql`${column.mapToDriverValue(value)}`;
	});
	const [inserted] = await db
		.insert(subscriptions)
		.select(sql`SELECT ${sql.join(values, sql`, `)} WHERE ${liveBelow(row.account, limit, at)}${also ? sql` AND ${also}` : sql``}`)
		.returning();
	return inserted;
}

// Whether the account holds fewer than `limit` live subscriptions, as a condition of the
// statement that makes one live: checked and written in one step.
function liveBelow(account: string, limit: number, at: number): SQL {
	return sql`(SELECT count(*) FROM ${subscriptions}
		WHERE ${subscriptions.account} = ${account} AND ${subscriptions.status} IN ('pending', 'confirmed')
			AND ${subscriptions.validity_ts} > ${at}) < ${limit}`;
}

// Live subscriptions (pending or confirmed, unexpired): what MAX_SUBSCRIPTIONS limits.
export async function countLiveSubscriptions(db: Database, account: string, at: number) {
	const [row] = await db
		.select({ n: sql<number>`count(*)` })
		.from(subscriptions)
		.where(and(eq(subscriptions.account, account), inArray(subscriptions.status, ["pending", "confirmed"]), gt(subscriptions.validity_ts, at)));
	return row?.n ?? 0;
}

export async function findSubscription(db: Database, uuid: string) {
	const [row] = await db.select().from(subscriptions).where(eq(subscriptions.uuid, uuid)).limit(1);
	return row;
}

// A subscription of the given account: another account's is as absent as a missing one.
export async function findOwnSubscription(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select()
		.from(subscriptions)
		.where(and(eq(subscriptions.uuid, uuid), eq(subscriptions.account, account)))
		.limit(1);
	return row;
}

// A pending or confirmed subscription past its validity is expired, whether or not a request
// has written that down yet; answers and filters go by this.
export function effectiveStatus(row: Pick<SubscriptionRow, "status" | "validity_ts">, at: number): Status {
	return (row.status === "pending" || row.status === "confirmed") && row.validity_ts <= at ? "expired" : row.status;
}

function statusIs(status: Status, at: number): SQL | undefined {
	const s = subscriptions;
	if (status === "expired") return or(eq(s.status, "expired"), and(inArray(s.status, ["pending", "confirmed"]), lte(s.validity_ts, at)));
	if (status === "pending" || status === "confirmed") return and(eq(s.status, status), gt(s.validity_ts, at));
	return eq(s.status, status);
}

export async function listSubscriptions(db: Database, account: string, filter: { topic?: string; status?: Status }, at: number) {
	return db
		.select()
		.from(subscriptions)
		.where(
			and(
				eq(subscriptions.account, account),
				filter.topic === undefined ? undefined : eq(subscriptions.topic, filter.topic),
				filter.status === undefined ? undefined : statusIs(filter.status, at),
			),
		)
		.orderBy(asc(subscriptions.created_ts), asc(subscriptions.uuid));
}

export async function deleteSubscription(db: Database, uuid: string) {
	await db.delete(subscriptions).where(eq(subscriptions.uuid, uuid));
}

// The token URL names the publishing account (the subscriber's own, or the one that granted it
// the topic).
export async function findByToken(db: Database, account: string, tokenHash: string) {
	const [row] = await db
		.select()
		.from(subscriptions)
		.where(and(eq(subscriptions.publisher, account), eq(subscriptions.token_hash, tokenHash)))
		.limit(1);
	return row;
}

type Changes = Partial<
	Pick<
		SubscriptionRow,
		| "status"
		| "validity_ts"
		| "message"
		| "token_hash"
		| "sealed_token"
		| "sealed_key"
		| "sealed_previous_key"
		| "previous_key_until"
		| "delivered_ts"
		| "failure_reason"
		| "attempts"
	>
>;

// `onlyIf` guards against a change racing another: the row changes only while it still has
// that status (and message), and undefined is answered when it no longer does.
export async function patchSubscription(
	db: Database,
	uuid: string,
	changes: Changes,
	at: number,
	onlyIf?: { status?: Status; message?: string; liveBelow?: { account: string; limit: number } },
) {
	const within = onlyIf?.liveBelow;
	const [row] = await db
		.update(subscriptions)
		.set({ ...changes, updated_ts: at })
		.where(
			and(
				eq(subscriptions.uuid, uuid),
				onlyIf?.status === undefined ? undefined : eq(subscriptions.status, onlyIf.status),
				onlyIf?.message === undefined ? undefined : eq(subscriptions.message, onlyIf.message),
				within === undefined ? undefined : liveBelow(within.account, within.limit, at),
			),
		)
		.returning();
	return row;
}

// The dead-letter consumer's verdict: only the confirmation it was about can fail it, and only
// while still pending.
export async function markFailed(db: Database, uuid: string, message: string, reason: string, at: number) {
	await db
		.update(subscriptions)
		.set({ status: "failed" satisfies Status, failure_reason: reason, updated_ts: at })
		.where(and(eq(subscriptions.uuid, uuid), eq(subscriptions.status, "pending"), eq(subscriptions.message, message)));
}

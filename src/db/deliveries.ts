import { and, desc, eq, lte, sql } from "drizzle-orm";
import type { Database } from "./client";
import { subscriptions, webhookDeliveries } from "./schema";
import { logStatements } from "./log";

// How many attempts a subscription keeps: the newest. An outage long enough to exhaust the
// retry schedule of many messages still leaves the table bounded per subscription.
export const MAX_DELIVERIES_KEPT = 100;

export type DeliveryRow = typeof webhookDeliveries.$inferSelect;
export type NewDelivery = Omit<DeliveryRow, "seq">;

// One attempt, in one batch: its record, the subscription's counters (a permanent failure of a
// pending subscription's confirmation fails the subscription) and the pruning of old records.
// A notification's attempt (`confirmation` false) updates only the last attempt and outcome:
// the counters and delivered_ts are the confirmation's, and only it can fail a subscription.
// A confirmation attempt settles the subscription only while its message is still the current
// one: an attempt of a message a resend replaced, finishing late, must neither mark the new
// message delivered (it would never be sent) nor fail the subscription pending again.
// `log`: the line the attempt leaves in an account's log (the last attempt of a message that
// failed for good), committed with the attempt's record: only when that account's database is
// this one.
export async function recordAttempt(
	db: Database,
	entry: NewDelivery,
	failsSubscription: boolean,
	confirmation = true,
	log?: { account: string; line: string },
) {
	const at = entry.attempted_ts;
	const s = subscriptions;
	const d = webhookDeliveries;
	await db.batch([
		db.insert(webhookDeliveries).values(entry),
		db
			.update(s)
			.set({
				last_attempt_ts: at,
				last_outcome: entry.detail,
				...(confirmation ? { attempts: sql`${s.attempts} + 1`, updated_ts: at } : {}),
				...(confirmation && entry.outcome === "delivered" ? { delivered_ts: at } : {}),
				...(confirmation && failsSubscription
					? {
							status: sql`CASE WHEN ${s.status} = 'pending' THEN 'failed' ELSE ${s.status} END`,
							failure_reason: sql`CASE WHEN ${s.status} = 'pending' THEN ${entry.detail} ELSE ${s.failure_reason} END`,
						}
					: {}),
			})
			.where(
				confirmation
					? and(eq(s.uuid, entry.subscription), eq(s.message, entry.message))
					: eq(s.uuid, entry.subscription),
			),
		db.delete(d).where(
			and(
				eq(d.subscription, entry.subscription),
				lte(
					d.seq,
					sql`(SELECT ${d.seq} FROM ${d} WHERE ${d.subscription} = ${entry.subscription}
					ORDER BY ${d.seq} DESC LIMIT 1 OFFSET ${MAX_DELIVERIES_KEPT})`,
				),
			),
		),
		...(log ? logStatements(db, log.account, at, [log.line]) : []),
	]);
}

export async function listDeliveries(db: Database, subscription: string) {
	return db
		.select()
		.from(webhookDeliveries)
		.where(eq(webhookDeliveries.subscription, subscription))
		.orderBy(desc(webhookDeliveries.seq))
		.limit(MAX_DELIVERIES_KEPT);
}

import { and, eq, inArray, sql } from "drizzle-orm";
import type { Database } from "./client";
import { notificationGrants, subscriptions } from "./schema";

// Replaces the topics `account` grants `grantee`, and ends, in the same batch, the grantee's
// subscriptions to `account`'s topics that are no longer granted: live ones, and failed ones,
// which a resent confirmation could otherwise bring back without the grant.
export async function replaceGrant(db: Database, account: string, grantee: string, topics: string[], at: number) {
	const g = notificationGrants;
	const s = subscriptions;
	const granted = JSON.stringify(topics);
	await db.batch([
		topics.length
			? db
					.insert(g)
					.values({ account, grantee, topics, updated_ts: at })
					.onConflictDoUpdate({ target: [g.account, g.grantee], set: { topics, updated_ts: at } })
			: db.delete(g).where(and(eq(g.account, account), eq(g.grantee, grantee))),
		db
			.update(s)
			.set({ status: "unsubscribed", sealed_token: null, sealed_key: null, sealed_previous_key: null, previous_key_until: null, updated_ts: at })
			.where(
				and(
					eq(s.account, grantee),
					eq(s.publisher, account),
					inArray(s.status, ["pending", "confirmed", "failed"]),
					sql`${s.topic} NOT IN (SELECT value FROM json_each(${granted}))`,
				),
			),
	]);
}

export function listGrants(db: Database, account: string) {
	return db
		.select({ grantee: notificationGrants.grantee, topics: notificationGrants.topics })
		.from(notificationGrants)
		.where(eq(notificationGrants.account, account))
		.orderBy(notificationGrants.grantee);
}

// The SQL condition "account has granted grantee the topic", for statements that must hold it
// at the moment they write (a subscribe racing a revocation).
export function grantHolds(account: string, grantee: string, topic: string) {
	const g = notificationGrants;
	return sql`EXISTS (SELECT 1 FROM ${g} WHERE ${g.account} = ${account} AND ${g.grantee} = ${grantee}
		AND ${topic} IN (SELECT value FROM json_each(${g.topics})))`;
}

export async function isGranted(db: Database, account: string, grantee: string, topic: string) {
	const row = await db.get<{ granted: number }>(sql`SELECT ${grantHolds(account, grantee, topic)} AS granted`);
	return row?.granted === 1;
}

import { and, asc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Database } from "./client";
import { notificationGrants, subscriptions } from "./schema";
import { ENDED_SUBSCRIPTION } from "./subscriptions";

// Replaces the topics `account` grants `grantee`, and ends, in the same batch, the grantee's
// subscriptions to `account`'s topics that are no longer granted: live ones, and failed ones,
// which a resent confirmation could otherwise bring back without the grant. A grant to a new
// grantee is written only while the account grants fewer than `limit` accounts, checked in the
// statement that writes it so concurrent grants cannot pass it; replacing or revoking a grant
// always is. Answers false, having written nothing, when the limit refused it.
export async function replaceGrant(
	db: Database,
	account: string,
	grantee: string,
	topics: string[],
	at: number,
	limit: number,
) {
	const g = notificationGrants;
	const s = subscriptions;
	const granted = JSON.stringify(topics);
	const held = sql`EXISTS (SELECT 1 FROM ${g} WHERE ${g.account} = ${account} AND ${g.grantee} = ${grantee})`;
	const within = sql`(SELECT count(*) FROM ${g} WHERE ${g.account} = ${account}) < ${limit}`;
	const [written] = await db.batch([
		topics.length
			? db
					.insert(g)
					.select(sql`SELECT ${account}, ${grantee}, ${granted}, ${at} WHERE ${held} OR ${within}`)
					.onConflictDoUpdate({ target: [g.account, g.grantee], set: { topics, updated_ts: at } })
					.returning({ grantee: g.grantee })
			: db
					.delete(g)
					.where(and(eq(g.account, account), eq(g.grantee, grantee)))
					.returning({ grantee: g.grantee }),
		db
			.update(s)
			.set({ ...ENDED_SUBSCRIPTION, updated_ts: at })
			.where(
				and(
					eq(s.account, grantee),
					eq(s.publisher, account),
					inArray(s.status, ["pending", "confirmed", "failed"]),
					sql`${s.topic} NOT IN (SELECT value FROM json_each(${granted}))`,
					// A grant the limit refused changes nothing.
					topics.length ? held : undefined,
				),
			),
	]);
	return topics.length === 0 || written.length > 0;
}

// One page of the account's grants in grantee order, from after `after`: `limit` rows, and
// whether more follow.
export async function listGrants(db: Database, account: string, after: string | null, limit: number) {
	const g = notificationGrants;
	const rows = await db
		.select({ grantee: g.grantee, topics: g.topics })
		.from(g)
		.where(and(eq(g.account, account), after === null ? undefined : gt(g.grantee, after)))
		.orderBy(asc(g.grantee))
		.limit(limit + 1);
	return { rows: rows.slice(0, limit), more: rows.length > limit };
}

// The SQL condition "account has granted grantee the topic", for statements that must hold it
// at the moment they write (a subscribe racing a revocation).
export function grantHolds(account: string, grantee: string, topic: string) {
	const g = notificationGrants;
	return sql`EXISTS (SELECT 1 FROM ${g} WHERE ${g.account} = ${account} AND ${g.grantee} = ${grantee}
		AND ${topic} IN (SELECT value FROM json_each(${g.topics})))`;
}

// Whether account grants grantee every one of `topics` (distinct), in one statement.
export async function isGranted(db: Database, account: string, grantee: string, topics: string[]) {
	const g = notificationGrants;
	const row = await db.get<{ granted: number }>(sql`SELECT count(*) = ${topics.length} AS granted
		FROM ${g}, json_each(${g.topics}) AS t
		WHERE ${g.account} = ${account} AND ${g.grantee} = ${grantee} AND t.value IN (SELECT value FROM json_each(${JSON.stringify(topics)}))`);
	return row?.granted === 1;
}

import { and, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./client";
import { idempotencyKeys, idempotencyQuota } from "./schema";

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

// A key and its answer are kept this long from the first request.
export const KEPT_SECONDS = 86_400;
// A claim whose request has not answered after this long is taken to have died with its
// isolate: the same request may claim it again. (Requests that write answer within seconds.)
export const LEASE_SECONDS = 300;
// Expired keys of the account deleted per claim, oldest first.
const PRUNED_PER_CLAIM = 100;

export type Claim = { account: string; key: string; fingerprint: string; trace: string; at: number };

// What an account may keep within the window: answered keys, and their bodies' bytes.
export type Quota = { keys: number; bytes: number };

// One round trip: the account's expired keys pruned (the claimed key's own first: it may not
// be among the oldest) and taken out of its quota, an abandoned claim of the same request taken
// over, the key claimed if free and the quota has room, and the key's row as it now stands.
// The row is the caller's own claim when its trace is the caller's; none when the key was free
// but the quota full.
export async function claimKey(db: Database, c: Claim, quota: Quota): Promise<IdempotencyRow | undefined> {
	const k = idempotencyKeys;
	const q = idempotencyQuota;
	const before = c.at - KEPT_SECONDS;
	const oldest = sql`SELECT ${k.key} FROM ${k} WHERE ${k.account} = ${c.account} AND ${k.created_ts} < ${before} ORDER BY ${k.created_ts} LIMIT ${PRUNED_PER_CLAIM}`;
	const expired = and(
		eq(k.account, c.account),
		sql`${k.created_ts} < ${before}`,
		sql`(${k.key} = ${c.key} OR ${k.key} IN (${oldest}))`,
	);
	// Only answered keys count in the quota; a claim still running does not.
	const kept = sql`FROM ${k} WHERE ${expired} AND ${k.status} IS NOT NULL`;
	const full = sql`SELECT 1 FROM ${q} WHERE ${q.account} = ${c.account} AND (${q.keys} >= ${quota.keys} OR ${q.bytes} >= ${quota.bytes})`;
	const [, , , , [row]] = await db.batch([
		db
			.update(q)
			.set({
				keys: sql`max(0, ${q.keys} - (SELECT count(*) ${kept}))`,
				bytes: sql`max(0, ${q.bytes} - (SELECT coalesce(sum(${k.bytes}), 0) ${kept}))`,
			})
			.where(eq(q.account, c.account)),
		db.delete(k).where(expired),
		db
			.update(k)
			.set({ trace: c.trace, created_ts: c.at })
			.where(
				and(
					eq(k.account, c.account),
					eq(k.key, c.key),
					eq(k.fingerprint, c.fingerprint),
					isNull(k.status),
					sql`${k.created_ts} < ${c.at - LEASE_SECONDS}`,
				),
			),
		db
			.insert(k)
			.select(
				sql`SELECT ${c.account}, ${c.key}, ${c.fingerprint}, ${c.trace}, NULL, NULL, NULL, 0, ${c.at}, NULL WHERE NOT EXISTS (${full})`,
			)
			.onConflictDoNothing(),
		db
			.select()
			.from(k)
			.where(and(eq(k.account, c.account), eq(k.key, c.key))),
	]);
	return row;
}

// The answer of the request that holds the claim, stored for its replays and counted in the
// account's quota (only when this claim's row took it).
export async function settleKey(
	db: Database,
	c: Claim,
	answer: { status: number; content_type: string | null; etag: string | null; body: string; bytes: number },
) {
	const k = idempotencyKeys;
	const q = idempotencyQuota;
	const mine = and(eq(k.account, c.account), eq(k.key, c.key), eq(k.trace, c.trace));
	await db.batch([
		db
			.update(k)
			.set(answer)
			.where(and(mine, isNull(k.status))),
		db
			.insert(q)
			.select(
				sql`SELECT ${c.account}, 1, ${answer.bytes} WHERE EXISTS (SELECT 1 FROM ${k} WHERE ${mine} AND ${k.status} IS NOT NULL)`,
			)
			.onConflictDoUpdate({
				target: q.account,
				set: { keys: sql`${q.keys} + 1`, bytes: sql`${q.bytes} + excluded.bytes` },
			}),
	]);
}

// A claim given up (the request answered 5xx or 429, or its answer is not kept): the key is
// free for the next request. An unanswered claim never counted in the quota.
export async function releaseKey(db: Database, c: Claim) {
	const k = idempotencyKeys;
	await db.delete(k).where(and(eq(k.account, c.account), eq(k.key, c.key), eq(k.trace, c.trace), isNull(k.status)));
}

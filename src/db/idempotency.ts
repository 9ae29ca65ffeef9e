import { and, eq, isNull, sql } from "drizzle-orm";
import type { Database } from "./client";
import { idempotencyKeys } from "./schema";

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

// A key and its answer are kept this long from the first request.
export const KEPT_SECONDS = 86_400;
// A claim whose request has not answered after this long is taken to have died with its
// isolate: the same request may claim it again. (Requests that write answer within seconds.)
export const LEASE_SECONDS = 300;
// Expired keys of the account deleted per claim, oldest first.
const PRUNED_PER_CLAIM = 100;

export type Claim = { account: string; key: string; fingerprint: string; trace: string; at: number };

// One round trip: the account's expired keys pruned (the claimed key's own first: it may not
// be among the oldest), an abandoned claim of the same request taken over, the key claimed if
// free, and the key's row as it now stands. The row is the caller's own claim when its trace
// is the caller's.
export async function claimKey(db: Database, c: Claim): Promise<IdempotencyRow> {
	const k = idempotencyKeys;
	const before = c.at - KEPT_SECONDS;
	const expired = sql`SELECT ${k.key} FROM ${k} WHERE ${k.account} = ${c.account} AND ${k.created_ts} < ${before} ORDER BY ${k.created_ts} LIMIT ${PRUNED_PER_CLAIM}`;
	const [, , , , [row]] = await db.batch([
		db.delete(k).where(and(eq(k.account, c.account), eq(k.key, c.key), sql`${k.created_ts} < ${before}`)),
		db.delete(k).where(and(eq(k.account, c.account), sql`${k.key} IN (${expired})`)),
		db
			.update(k)
			.set({ trace: c.trace, created_ts: c.at })
			.where(and(eq(k.account, c.account), eq(k.key, c.key), eq(k.fingerprint, c.fingerprint), isNull(k.status), sql`${k.created_ts} < ${c.at - LEASE_SECONDS}`)),
		db.insert(k).values({ account: c.account, key: c.key, fingerprint: c.fingerprint, trace: c.trace, created_ts: c.at }).onConflictDoNothing(),
		db.select().from(k).where(and(eq(k.account, c.account), eq(k.key, c.key))),
	]);
	return row;
}

// The answer of the request that holds the claim, stored for its replays.
export async function settleKey(db: Database, c: Claim, answer: { status: number; content_type: string | null; body: string }) {
	const k = idempotencyKeys;
	await db
		.update(k)
		.set(answer)
		.where(and(eq(k.account, c.account), eq(k.key, c.key), eq(k.trace, c.trace)));
}

// A claim given up (the request answered 5xx or 429, or its answer is not kept): the key is
// free for the next request.
export async function releaseKey(db: Database, c: Claim) {
	const k = idempotencyKeys;
	await db.delete(k).where(and(eq(k.account, c.account), eq(k.key, c.key), eq(k.trace, c.trace), isNull(k.status)));
}

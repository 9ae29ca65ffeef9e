import { and, asc, eq, sql } from "drizzle-orm";
import type { Database } from "./client";
import { twinIdentities } from "./schema";

export type IdentityRow = typeof twinIdentities.$inferSelect;
export type IdentityChanges = Partial<Pick<IdentityRow, "validity_ts" | "visibility">>;

const key = (twin: string, account: string, identity: string) =>
	and(eq(twinIdentities.twin, twin), eq(twinIdentities.account, account), eq(twinIdentities.identity, identity));

// One of the account's identities on a twin. A found row and a missing one both read exactly
// one row (the account's own row stands in for a missing identity), so an identity the caller
// may not see costs what an absent one costs and Server-Timing cannot tell them apart.
export async function findOwnIdentity(db: Database, twin: string, account: string, identity: string) {
	const rows = (await db.all(sql`
		SELECT twin, account, identity, validity_ts, visibility, created_ts, updated_ts FROM twin_identities
		WHERE twin = ${twin} AND account = ${account} AND identity = ${identity}
		UNION ALL
		SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL FROM accounts WHERE uuid = ${account}
		LIMIT 1`)) as (IdentityRow | { identity: null })[];
	const [row] = rows;
	return row && row.identity !== null ? (row as IdentityRow) : undefined;
}

// All of an account's identities on a twin: at most the per-(twin, account) limit.
export function listOwnIdentities(db: Database, twin: string, account: string) {
	return db
		.select()
		.from(twinIdentities)
		.where(and(eq(twinIdentities.twin, twin), eq(twinIdentities.account, account)))
		.orderBy(asc(twinIdentities.identity));
}

// The public identities on a twin (or those of one account), in a fixed order and bounded.
// Which of them the reader sees, neither its own account's nor expired ones among them, is
// decided by the caller: every row the scan touches is returned, so the caller can take what
// the hidden ones cost out of Server-Timing (D1Meter.concealRows, one row each).
export function listPublicIdentities(db: Database, twin: string, only: string | null, limit: number) {
	return db.all(sql`
		SELECT twin, account, identity, validity_ts, visibility, created_ts, updated_ts FROM twin_identities
		WHERE twin = ${twin} AND visibility IS NOT NULL ${only ? sql`AND account = ${only}` : sql``}
		ORDER BY account, identity LIMIT ${limit}`) as Promise<IdentityRow[]>;
}

// Each insert is its own statement (D1 binds at most 100 parameters per statement); the batch
// applies them all or none.
export async function insertIdentities(db: Database, rows: IdentityRow[]) {
	const [first, ...rest] = rows.map((row) => db.insert(twinIdentities).values(row));
	await db.batch([first, ...rest]);
}

export async function patchIdentity(db: Database, twin: string, account: string, identity: string, changes: IdentityChanges, at: number) {
	const [row] = await db
		.update(twinIdentities)
		.set({ ...changes, updated_ts: at })
		.where(key(twin, account, identity))
		.returning();
	return row;
}

export async function deleteIdentity(db: Database, twin: string, account: string, identity: string) {
	const [row] = await db.delete(twinIdentities).where(key(twin, account, identity)).returning();
	return row;
}

export type ResolvedRow = IdentityRow & {
	part: "own" | "foreign";
	owner: string;
	status: "alive" | "terminated";
	description: string;
	creation_certificate: string;
	termination_certificate: string | null;
	twin_updated_ts: number;
};

const twinColumns = sql.raw(`i.twin, i.account, i.identity, i.validity_ts, i.visibility, i.created_ts, i.updated_ts,
	t.owner, t.status, t.description, t.creation_certificate, t.termination_certificate, t.updated_ts AS twin_updated_ts
	FROM twin_identities i JOIN twins t ON t.uuid = i.twin`);

// resolve_twin_identity: the attachments of one identity, with their twins, through the
// identity indexes: the `own` account's ids and, when `foreign` is given, every account's
// public ids (or those of the listed accounts). Private ids of other accounts are not read.
// Which rows the reader sees, expired ones and its own in the foreign part excluded, is decided
// by the caller: every row the scan touches is returned, and each cost two rows (its index
// entry and its twin), which the caller takes out of Server-Timing for the hidden ones. The
// caller sorts: an ORDER BY would sort through a temporary table whose reads count too, and
// would read every match before keeping `limit` of them.
export function resolveIdentity(db: Database, identity: string, own: string | null, foreign: { only: string[] | null } | null, limit: number) {
	const parts = [];
	if (own) parts.push(sql`'own' AS part, ${twinColumns} WHERE i.identity = ${identity} AND i.account = ${own}`);
	if (foreign && foreign.only?.length !== 0) {
		const accounts = foreign.only ? sql`AND i.account IN (SELECT value FROM json_each(${JSON.stringify(foreign.only)}))` : sql``;
		parts.push(sql`'foreign' AS part, ${twinColumns} WHERE i.identity = ${identity} AND i.visibility IS NOT NULL ${accounts}`);
	}
	if (parts.length === 0) return Promise.resolve([] as ResolvedRow[]);
	const selects = parts.map((part) => sql`SELECT ${part}`);
	return db.all(sql`${sql.join(selects, sql` UNION ALL `)} LIMIT ${limit}`) as Promise<ResolvedRow[]>;
}

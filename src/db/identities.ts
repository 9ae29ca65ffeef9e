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

// Other accounts' public, unexpired identities on a twin (or one other account's), in a
// fixed order and bounded: whether each is visible is then decided by its rules.
export function listForeignIdentities(db: Database, twin: string, reader: string, only: string | null, now: number, limit: number) {
	return db.all(sql`
		SELECT twin, account, identity, validity_ts, visibility, created_ts, updated_ts FROM twin_identities
		WHERE twin = ${twin} AND account <> ${reader} ${only ? sql`AND account = ${only}` : sql``}
			AND visibility IS NOT NULL AND (validity_ts IS NULL OR validity_ts > ${now})
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
	owner: string;
	status: "alive" | "terminated";
	description: string;
	creation_certificate: string;
	termination_certificate: string | null;
	twin_updated_ts: number;
};

// resolve_twin_identity: the unexpired attachments of one identity, with their twins, through
// the identity indexes: the reader's own account's ids and, when `foreign` is given, other
// accounts' public ids (all of them, or those of the listed accounts). Nothing else is read.
export function resolveIdentity(
	db: Database,
	identity: string,
	own: string | null,
	foreign: { except: string; only: string[] | null } | null,
	now: number,
	limit: number,
) {
	const parts = [];
	const unexpired = sql`(i.validity_ts IS NULL OR i.validity_ts > ${now})`;
	if (own) parts.push(sql`i.identity = ${identity} AND i.account = ${own} AND ${unexpired}`);
	if (foreign && foreign.only?.length !== 0) {
		const accounts = foreign.only
			? sql`i.account IN (SELECT value FROM json_each(${JSON.stringify(foreign.only)}))`
			: sql`i.account <> ${foreign.except}`;
		parts.push(sql`i.identity = ${identity} AND i.visibility IS NOT NULL AND ${accounts} AND i.account <> ${foreign.except} AND ${unexpired}`);
	}
	if (parts.length === 0) return Promise.resolve([] as ResolvedRow[]);
	const selects = parts.map(
		(where) => sql`SELECT i.twin, i.account, i.identity, i.validity_ts, i.visibility, i.created_ts, i.updated_ts,
			t.owner, t.status, t.description, t.creation_certificate, t.termination_certificate, t.updated_ts AS twin_updated_ts
		FROM twin_identities i JOIN twins t ON t.uuid = i.twin WHERE ${where}`,
	);
	return db.all(sql`${sql.join(selects, sql` UNION ALL `)} ORDER BY twin, account LIMIT ${limit}`) as Promise<ResolvedRow[]>;
}

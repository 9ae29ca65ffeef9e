import { and, asc, eq, sql } from "drizzle-orm";
import type { Database } from "./client";
import { twinIdentities } from "./schema";

export type IdentityRow = typeof twinIdentities.$inferSelect;
export type IdentityChanges = Partial<Pick<IdentityRow, "validity_ts" | "visibility">>;

const key = (twin: string, account: string, identity: string) =>
	and(eq(twinIdentities.twin, twin), eq(twinIdentities.account, account), eq(twinIdentities.identity, identity));

// One of the account's identities on a twin. Whether the caller may see it is decided by the
// caller, which counts it through D1Meter.sighted.
export async function findOwnIdentity(
	db: Database,
	twin: string,
	account: string,
	identity: string,
): Promise<IdentityRow | undefined> {
	const [row] = await db
		.select()
		.from(twinIdentities)
		.where(key(twin, account, identity))
		.limit(1);
	return row;
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
// decided by the caller, which counts the read through D1Meter.sighted.
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

export async function patchIdentity(
	db: Database,
	twin: string,
	account: string,
	identity: string,
	changes: IdentityChanges,
	at: number,
) {
	const [row] = await db
		.update(twinIdentities)
		.set({ ...changes, updated_ts: at })
		.where(key(twin, account, identity))
		.returning();
	return row;
}

export async function deleteIdentity(db: Database, twin: string, account: string, identity: string) {
	const [row] = await db
		.delete(twinIdentities)
		.where(key(twin, account, identity))
		.returning();
	return row;
}

export type ResolvedRow = IdentityRow & {
	part: "own" | "foreign";
	owner: string;
	status: "alive" | "terminated";
	// Null when the read leaves the twin's description out.
	description: string | null;
	creation_certificate: string | null;
	termination_certificate: string | null;
	twin_updated_ts: number;
};

// Where a page of resolve_twin_identity ends: its parts are read in index order, the `own`
// account's ids by twin, then other accounts' public ids by account and twin.
export type ResolvePosition = { part: "own" | "foreign"; account: string; twin: string };

const identityColumns = sql.raw(`i.twin, i.account, i.identity, i.validity_ts, i.visibility, i.created_ts, i.updated_ts,
	t.owner, t.status, t.updated_ts AS twin_updated_ts`);
const twinJson = sql.raw("t.description, t.creation_certificate, t.termination_certificate");
const noTwinJson = sql.raw("NULL AS description, NULL AS creation_certificate, NULL AS termination_certificate");

// resolve_twin_identity: up to `limit` attachments of one identity after `after`, with their
// twins, in one statement through the identity indexes, each part in its index's order (no
// sort of the matches, no temporary table): the `own` account's ids by twin, and, when
// `foreign` is given, other accounts' public ids (or the listed accounts') by account and twin;
// other accounts' private ids are never read. Descriptions, up to 32 KiB each, are read only
// when asked for. Answers the own part first. The caller decides which rows the reader sees
// and counts the read through D1Meter.sighted.
export async function resolveIdentity(
	db: Database,
	query: {
		identity: string;
		own: string | null;
		foreign: { only: string[] | null; except: string } | null;
		descriptions: boolean;
	},
	after: ResolvePosition | null,
	limit: number,
): Promise<ResolvedRow[]> {
	const columns = sql`${identityColumns}, ${query.descriptions ? twinJson : noTwinJson}`;
	const parts = [];
	if (query.own && after?.part !== "foreign") {
		parts.push(sql`SELECT * FROM (SELECT 'own' AS part, ${columns} FROM twin_identities i JOIN twins t ON t.uuid = i.twin
			WHERE i.identity = ${query.identity} AND i.account = ${query.own} AND i.twin > ${after?.twin ?? ""}
			ORDER BY i.twin LIMIT ${limit})`);
	}
	const { foreign } = query;
	if (foreign && foreign.only?.length !== 0) {
		const accounts = foreign.only
			? sql`AND i.account IN (SELECT value FROM json_each(${JSON.stringify(foreign.only)}))`
			: sql``;
		const from = after?.part === "foreign" ? sql`AND (i.account, i.twin) > (${after.account}, ${after.twin})` : sql``;
		parts.push(sql`SELECT * FROM (SELECT 'foreign' AS part, ${columns} FROM twin_identities i JOIN twins t ON t.uuid = i.twin
			WHERE i.identity = ${query.identity} AND i.visibility IS NOT NULL AND i.account <> ${foreign.except} ${accounts} ${from}
			ORDER BY i.account, i.twin LIMIT ${limit})`);
	}
	if (parts.length === 0) return [];
	const rows = (await db.all(sql.join(parts, sql` UNION ALL `))) as ResolvedRow[];
	const order = (row: ResolvedRow) => `${row.part === "own" ? 0 : 1}/${row.account}/${row.twin}`;
	return rows.sort((x, y) => (order(x) < order(y) ? -1 : order(x) > order(y) ? 1 : 0)).slice(0, limit);
}

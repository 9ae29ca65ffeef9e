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
// they join applies them all or none.
export function insertIdentities(db: Database, rows: IdentityRow[]) {
	return rows.map((row) => db.insert(twinIdentities).values(row));
}

export function patchIdentity(
	db: Database,
	twin: string,
	account: string,
	identity: string,
	changes: IdentityChanges,
	at: number,
) {
	return db
		.update(twinIdentities)
		.set({ ...changes, updated_ts: at })
		.where(key(twin, account, identity))
		.returning();
}

export function deleteIdentity(db: Database, twin: string, account: string, identity: string) {
	return db
		.delete(twinIdentities)
		.where(key(twin, account, identity))
		.returning();
}

// An attachment of the identity resolve_twin_identity looks for: the `own` account's, or
// another account's public one.
export type AttachmentRow = IdentityRow & { part: "own" | "foreign" };

// What resolve_twin_identity reads of an attachment's twin, in the twin owner's database.
export type ResolvedTwin = {
	uuid: string;
	owner: string;
	status: "alive" | "terminated";
	updated_ts: number;
	// Null when the read leaves the twin's description out.
	description: string | null;
	creation_certificate: string | null;
	termination_certificate: string | null;
};

export type ResolvedRow = AttachmentRow & {
	owner: string;
	status: "alive" | "terminated";
	description: string | null;
	creation_certificate: string | null;
	termination_certificate: string | null;
	twin_updated_ts: number;
};

const attachmentColumns = sql.raw("twin, account, identity, validity_ts, visibility, created_ts, updated_ts");

// The `own` account's attachments of an identity after `after`, by twin, through the identity
// index (no sort, no temporary table), in that account's database.
export function ownAttachments(db: Database, identity: string, own: string, after: string, limit: number) {
	return db.all(sql`SELECT 'own' AS part, ${attachmentColumns} FROM twin_identities
		WHERE identity = ${identity} AND account = ${own} AND twin > ${after}
		ORDER BY twin LIMIT ${limit}`) as Promise<AttachmentRow[]>;
}

// The listed accounts' public attachments of an identity, by account and twin, after `after`,
// in one database; their private ids are never read. (Every other account's are found through
// the directory of public identities, db/directory.ts.)
export function foreignAttachments(
	db: Database,
	identity: string,
	accounts: string[],
	after: { account: string; twin: string } | null,
	limit: number,
) {
	const from = after ? sql`AND (account, twin) > (${after.account}, ${after.twin})` : sql``;
	return db.all(sql`SELECT 'foreign' AS part, ${attachmentColumns} FROM twin_identities
		WHERE identity = ${identity} AND visibility IS NOT NULL
			AND account IN (SELECT value FROM json_each(${JSON.stringify(accounts)})) ${from}
		ORDER BY account, twin LIMIT ${limit}`) as Promise<AttachmentRow[]>;
}

// The twins of a page's attachments held in one database. Descriptions, up to 32 KiB each, are
// read only when asked for.
export function resolvedTwins(db: Database, uuids: string[], descriptions: boolean) {
	const json = descriptions
		? sql.raw("description, creation_certificate, termination_certificate")
		: sql.raw("NULL AS description, NULL AS creation_certificate, NULL AS termination_certificate");
	return db.all(sql`SELECT uuid, owner, status, updated_ts, ${json} FROM twins
		WHERE uuid IN (SELECT value FROM json_each(${JSON.stringify(uuids)}))`) as Promise<ResolvedTwin[]>;
}

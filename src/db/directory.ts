import { and, asc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import type { AttachmentRow } from "./identities";
import { directoryOutbox, identityDirectory, twinHolders } from "./schema";

// The directory of public identities and the lists of who holds identities on a twin
// (docs/scaling.md, "What crosses accounts"). Each identity change that makes an identity
// public, private or gone leaves a row in its account's outbox, in the change's own batch; the
// account's object applies the outbox to the directory in the database of the identity's hash.

export type DirectoryChange = "put" | "end";
export type OutboxRow = typeof directoryOutbox.$inferSelect;

const key = (twin: string, account: string, identity: string) =>
	sql`twin = ${twin} AND account = ${account} AND identity = ${identity}`;

// The outbox rows of identities a create attaches: public ones only.
export function directoryPuts(db: Database, account: string, twin: string, identities: string[]) {
	if (identities.length === 0) return [];
	return [
		db.insert(directoryOutbox).select(sql`
			SELECT NULL, ${account}, value, ${twin}, 'put' FROM json_each(${JSON.stringify(identities)}) ORDER BY key`),
	];
}

// The outbox row of an identity as it is once the batch's earlier statements ran: public
// ("put") or private ("end"); none when it is gone. Before a delete, `onlyPublic` keeps a
// private identity, never in the directory, from making a row.
export function directoryChangeOf(
	db: Database,
	key_: { twin: string; account: string; identity: string },
	change: "as-it-is" | "end",
) {
	const what = change === "end" ? sql`'end'` : sql`CASE WHEN visibility IS NULL THEN 'end' ELSE 'put' END`;
	const only = change === "end" ? sql`AND visibility IS NOT NULL` : sql``;
	return db.insert(directoryOutbox).select(sql`
		SELECT NULL, account, identity, twin, ${what} FROM twin_identities
		WHERE ${key(key_.twin, key_.account, key_.identity)} ${only}`);
}

// The account's outbox rows, oldest first.
export function pendingDirectory(db: Database, account: string, limit: number): Promise<OutboxRow[]> {
	const o = directoryOutbox;
	return db.select().from(o).where(eq(o.account, account)).orderBy(asc(o.id)).limit(limit);
}

// What outbox rows do to the directory's database, in their order: a put writes the entry, an
// end deletes it, each by key, so a row applied again leaves what it left the first time.
export function applyDirectory(db: Database, rows: (OutboxRow & { bucket: number })[]): BatchItem<"sqlite">[] {
	const d = identityDirectory;
	return rows.map((row) =>
		row.change === "put"
			? db
					.insert(d)
					.values({ identity: row.identity, account: row.account, twin: row.twin, bucket: row.bucket })
					.onConflictDoNothing()
			: db.delete(d).where(and(eq(d.identity, row.identity), eq(d.account, row.account), eq(d.twin, row.twin))),
	);
}

// Deletes outbox rows once applied.
export function deleteDirectoryRows(db: Database, account: string, ids: number[]) {
	const o = directoryOutbox;
	return db
		.delete(o)
		.where(and(eq(o.account, account), sql`${o.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`));
}

export type Candidate = { account: string; twin: string };

// The accounts and twins the directory lists for an identity, but `except`'s, by account and
// twin, after `after`: one index range of the directory's database.
export function directoryCandidates(
	db: Database,
	identity: string,
	except: string,
	after: Candidate | null,
	limit: number,
) {
	const from = after ? sql`AND (account, twin) > (${after.account}, ${after.twin})` : sql``;
	return db.all(sql`SELECT account, twin FROM identity_directory
		WHERE identity = ${identity} AND account <> ${except} ${from}
		ORDER BY account, twin LIMIT ${limit}`) as Promise<Candidate[]>;
}

const attachmentColumns = sql.raw(
	"i.twin, i.account, i.identity, i.validity_ts, i.visibility, i.created_ts, i.updated_ts",
);

// The candidates' attachments of an identity as they are now, in the database of their
// accounts: those still public (the directory may not yet know of a change), by key.
export function candidateAttachments(db: Database, identity: string, candidates: Candidate[]) {
	const list = JSON.stringify(candidates.map((c) => [c.account, c.twin]));
	return db.all(sql`SELECT 'foreign' AS part, ${attachmentColumns}
		FROM json_each(${list}) AS c JOIN twin_identities AS i
			ON i.twin = json_extract(c.value, '$[1]') AND i.account = json_extract(c.value, '$[0]') AND i.identity = ${identity}
		WHERE i.visibility IS NOT NULL`) as Promise<AttachmentRow[]>;
}

// Lists an account as holding public identities on a twin, in the twin owner's database.
export function putHolder(db: Database, twin: string, account: string) {
	return db.insert(twinHolders).values({ twin, account }).onConflictDoNothing();
}

// The accounts listed as holding public identities on a twin, by account, at most `limit`.
export async function holdersOf(db: Database, twin: string, limit: number): Promise<string[]> {
	const h = twinHolders;
	const rows = await db
		.select({ account: h.account })
		.from(h)
		.where(eq(h.twin, twin))
		.orderBy(asc(h.account))
		.limit(limit);
	return rows.map((row) => row.account);
}

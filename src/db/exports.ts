import { eq } from "drizzle-orm";
import type { Database } from "./client";
import type { IdentityRow } from "./identities";
import type { EntryRow } from "./ledgers";
import { accounts } from "./schema";
import { type PageQuery, type PageRow, twinPageStatement } from "./twins";

// What an export reads (docs/batches.md, "Exports"): the account's twins a page at a time in uuid
// order, each with the account's own identities and ledger entries on it, all in the account's
// database (a twin lives with its owner, an account's identities and entries with it).

// How many twins the account has made (terminated ones stay): an export's `progress.twins`.
export async function madeTwins(db: Database, account: string): Promise<number> {
	const [row] = await db.select({ twins: accounts.twins }).from(accounts).where(eq(accounts.uuid, account)).limit(1);
	return row?.twins ?? 0;
}

export type TwinSize = { uuid: string; bytes: number };

// The next `count` twins of the account after `after`, each with about how many bytes reading it
// whole would bring: its JSON columns, and with `parts` its identities and its entries (their
// stored sizes), so that a step takes no more than it may hold. No value is read for it.
export async function twinSizes(
	d1: D1Database,
	page: { owner: string; after: string; count: number },
	parts: { identities: boolean; ledgers: boolean },
): Promise<TwinSize[]> {
	const identities = parts.identities
		? `(SELECT coalesce(sum(length(identity) + coalesce(length(visibility), 0) + ${IDENTITY_OVERHEAD}), 0)
			FROM twin_identities i WHERE i.twin = t.uuid AND i.account = ?1)`
		: "0";
	const entries = parts.ledgers
		? `(SELECT coalesce(sum(size + length(name) + coalesce(length(visibility), 0) + coalesce(length(history), 0)
			+ coalesce(length(publish), 0) + ${ENTRY_OVERHEAD}), 0) FROM ledger_entries e WHERE e.twin = t.uuid AND e.account = ?1)`
		: "0";
	const text = `SELECT uuid, length(description) + length(creation_certificate) + coalesce(length(termination_certificate), 0)
		+ ${TWIN_OVERHEAD} + ${identities} + ${entries} AS bytes
		FROM twins t WHERE owner = ?1 AND uuid > ?2 ORDER BY uuid LIMIT ?3`;
	const rows = await d1.prepare(text).bind(page.owner, page.after, page.count).all<TwinSize>();
	return rows.results;
}

// What a line adds besides the columns counted: its keys, timestamps and uuids.
const TWIN_OVERHEAD = 200;
const IDENTITY_OVERHEAD = 150;
const ENTRY_OVERHEAD = 250;

export type ExportPage = { twins: PageRow[]; identities: IdentityRow[]; entries: EntryRow[] };

// A page of twins as a scan reads it (its rules compiled into `page.verdict`), with the
// account's identities and entries on the same twins, in one batch: one snapshot, so that a
// twin's lines agree with each other. Those of twins the page then leaves out are dropped.
export async function readExportPage(
	d1: D1Database,
	page: PageQuery,
	parts: { identities: boolean; ledgers: boolean },
): Promise<ExportPage> {
	const range = "SELECT uuid FROM twins WHERE owner = ?1 AND uuid > ?2 ORDER BY uuid LIMIT ?3";
	const statements = [twinPageStatement(d1, page)];
	if (parts.identities)
		statements.push(
			d1
				.prepare(
					`SELECT twin, account, identity, validity_ts, visibility, created_ts, updated_ts FROM twin_identities
					WHERE account = ?1 AND twin IN (${range}) ORDER BY twin, identity`,
				)
				.bind(page.owner, page.after, page.count),
		);
	if (parts.ledgers)
		statements.push(
			d1
				.prepare(`SELECT * FROM ledger_entries WHERE account = ?1 AND twin IN (${range}) ORDER BY twin, name`)
				.bind(page.owner, page.after, page.count),
		);
	const [twins, ...rest] = await d1.batch(statements);
	const identities = parts.identities ? (rest.shift()!.results as IdentityRow[]) : [];
	const entries = parts.ledgers ? (rest.shift()!.results as RawEntry[]).map(entryOf) : [];
	return { twins: twins!.results as PageRow[], identities, entries };
}

// An entry as D1 answers it: its JSON columns as text.
type RawEntry = Omit<EntryRow, "publish" | "timeseries"> & { publish: string | null; timeseries: string | null };

function entryOf(raw: RawEntry): EntryRow {
	return {
		...raw,
		publish: raw.publish === null ? null : (JSON.parse(raw.publish) as EntryRow["publish"]),
		timeseries: raw.timeseries === null ? null : (JSON.parse(raw.timeseries) as EntryRow["timeseries"]),
	};
}

// A page of an Indexes table's rows in twin order, by their stored sizes only: how many rows
// a step may read whole.
export async function indexRowSizes(
	d1: D1Database,
	key: { table: string; generation: number },
	after: string,
	count: number,
): Promise<number[]> {
	const rows = await d1
		.prepare(`SELECT size FROM index_rows WHERE "table" = ?1 AND generation = ?2 AND twin > ?3 ORDER BY twin LIMIT ?4`)
		.bind(key.table, key.generation, after, count)
		.all<{ size: number }>();
	return rows.results.map((row) => row.size);
}

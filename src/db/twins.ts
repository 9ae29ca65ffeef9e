import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { type LineMark, lineMarks } from "./jobs";
import { accounts, type Description, twins } from "./schema";

export type TwinRow = typeof twins.$inferSelect;

// Inserts the twin only while its owner has made fewer than `limit` (MAX_TWINS), and counts it,
// in one batch: the count is read and raised in the same transaction as the insert, so
// concurrent creates cannot pass the limit. Answers undefined when the limit refused it. A batch
// line's mark commits in the same batch.
export async function insertTwinWithin(
	db: Database,
	row: TwinRow,
	limit: number,
	mark?: LineMark,
): Promise<TwinRow | undefined> {
	// INSERT ... SELECT names every column of the table, in the table's order.
	const values = sql`${row.uuid}, ${row.owner}, ${row.status}, ${JSON.stringify(row.description)},
		${JSON.stringify(row.creation_certificate)}, NULL, ${row.updated_ts}, ${row.version}`;
	const [inserted] = await db.batch([
		db
			.insert(twins)
			.select(
				sql`SELECT ${values} WHERE (SELECT ${accounts.twins} FROM ${accounts} WHERE ${accounts.uuid} = ${row.owner}) < ${limit}`,
			)
			.returning({ uuid: twins.uuid }),
		db
			.update(accounts)
			.set({ twins: sql`${accounts.twins} + 1` })
			.where(and(eq(accounts.uuid, row.owner), sql`EXISTS (SELECT 1 FROM ${twins} WHERE ${twins.uuid} = ${row.uuid})`)),
		...lineMarks(db, mark, row.updated_ts),
	]);
	return inserted.length ? row : undefined;
}

// Twins of any account: visibility is decided by the caller's role, not by ownership alone.
export async function findTwin(db: Database, uuid: string) {
	const [row] = await db.select().from(twins).where(eq(twins.uuid, uuid)).limit(1);
	return row;
}

// Several twins by uuid, in no particular order; absent ones are left out. It runs for an
// empty list too: a read that skipped it would count one query less in Server-Timing.
export function findTwins(db: Database, uuids: string[]) {
	return db
		.select()
		.from(twins)
		.where(sql`${twins.uuid} IN (SELECT value FROM json_each(${JSON.stringify(uuids)}))`);
}

// A write of the owner's account to its alive twin, whose version If-Match names when it names
// any (`versions` null: any version will do). Both writes decide all of it in the UPDATE itself,
// so a concurrent write or termination cannot come between the check and the write.
export type TwinWrite = { owner: string; uuid: string; versions: number[] | null };

const writable = ({ owner, uuid, versions }: TwinWrite) =>
	and(
		eq(twins.uuid, uuid),
		eq(twins.owner, owner),
		eq(twins.status, "alive"),
		// One bound list however many tags If-Match names (D1 binds at most 100 values).
		versions === null ? undefined : sql`${twins.version} IN (SELECT value FROM json_each(${JSON.stringify(versions)}))`,
	);

// What a write that matched nothing found, in the same transaction: whose twin it is, its
// status and its version (the refusal's ETag).
export type TwinState = Pick<TwinRow, "uuid" | "owner" | "status" | "version">;
type Written = { row: TwinRow } | { current: TwinState };

// The written row, or the twin's state when the write matched nothing (twins are never deleted,
// and the caller found this one). A batch line's mark commits with the write, or with its refusal.
async function guarded(
	db: Database,
	target: TwinWrite,
	update: BatchItem<"sqlite">,
	mark: LineMark | undefined,
	at: number,
): Promise<Written> {
	const state = db
		.select({ uuid: twins.uuid, owner: twins.owner, status: twins.status, version: twins.version })
		.from(twins)
		.where(eq(twins.uuid, target.uuid));
	const [written, [current]] = (await db.batch([update, state, ...lineMarks(db, mark, at)])) as [
		TwinRow[],
		TwinState[],
	];
	return written.length ? { row: written[0] } : { current };
}

// A description sent whole (replace), or a merge patch of it (RFC 7396) that SQLite's json_patch
// merges in the UPDATE itself, so that two patches of different keys never lose one another.
export type DescriptionWrite = { merge: boolean; description: Description };

// A description equal to the stored one as text changes nothing (updated_ts and version stay):
// json_patch keeps each stored member's text and place, so a merge that leaves the description
// as it was leaves its text as it was. One larger than `maxBytes` (as compact UTF-8, as
// json_patch writes it) is not written.
export function writeDescription(
	db: Database,
	target: TwinWrite,
	write: DescriptionWrite,
	at: number,
	maxBytes: number,
	mark?: LineMark,
) {
	const given = JSON.stringify(write.description);
	const next = write.merge ? sql`json_patch(${twins.description}, ${given})` : sql`${given}`;
	const same = sql`${next} IS ${twins.description}`;
	const bytes = sql<number>`length(CAST(${next} AS BLOB))`;
	const update = db
		.update(twins)
		.set({
			description: next,
			updated_ts: sql`CASE WHEN ${same} THEN ${twins.updated_ts} ELSE ${at} END`,
			version: sql`CASE WHEN ${same} THEN ${twins.version} ELSE ${twins.version} + 1 END`,
		})
		.where(and(writable(target), sql`${bytes} <= ${maxBytes}`))
		.returning();
	return guarded(db, target, update, mark, at);
}

export function markTerminated(db: Database, target: TwinWrite, at: number, mark?: LineMark) {
	const update = db
		.update(twins)
		.set({
			status: "terminated",
			termination_certificate: { issuer: target.owner, terminated_ts: at },
			updated_ts: at,
			version: sql`${twins.version} + 1`,
		})
		.where(writable(target))
		.returning();
	return guarded(db, target, update, mark, at);
}

// The twin columns a compiled rule reads, by the names the page's inner query gives them.
export const TWIN_COLUMNS = { uuid: "uuid", owner: "owner", status: "status", description: "description" } as const;

export type PageRow = {
	uuid: string;
	verdict: number | null;
	owner: string | null;
	status: string | null;
	description: string | null;
	creation_certificate: string | null;
	termination_certificate: string | null;
	updated_ts: number | null;
};

// The next `count` twins of the owner after `after`, in uuid order, through the (owner, uuid)
// index: no OFFSET, so a page costs the same wherever it is in the account. `verdict` is the
// scan's rules compiled to SQL over TWIN_COLUMNS (1, 0 or NULL per twin); the detailed columns
// come back only where they are needed: to show the twin, or to let the evaluator decide a NULL.
export type PageQuery = { owner: string; after: string; count: number; verdict: string; details: boolean };

// The columns a detailed twin is shown from, besides its uuid.
const DETAIL_COLUMNS = [
	"owner",
	"status",
	"description",
	"creation_certificate",
	"termination_certificate",
	"updated_ts",
];
const PAGE_RANGE = "FROM twins WHERE owner = ? AND uuid > ? ORDER BY uuid LIMIT ?";

// A statement, to run in one batch with the credential's row when the object checks it.
export function twinPageStatement(d1: D1Database, page: PageQuery): D1PreparedStatement {
	return d1.prepare(pageSql(page.verdict, page.details)).bind(page.owner, page.after, page.count);
}

// The page's SQL text: no query builder, since a page is the hottest read there is and its
// text is only this. Without a rule the verdict is the constant 1 and every row is shown, or
// none needs its columns, so the rows are read flat; with one, the inner query computes the
// verdict once per twin and the outer keeps the columns only where they are needed.
function pageSql(verdict: string, details: boolean): string {
	if (verdict === "1") {
		const columns = DETAIL_COLUMNS.map((column) => (details ? column : `NULL AS ${column}`));
		return `SELECT uuid, 1 AS verdict, ${columns.join(", ")} ${PAGE_RANGE}`;
	}
	const keep = details ? "verdict IS NOT 0" : "verdict IS NULL";
	const columns = DETAIL_COLUMNS.map((column) => `CASE WHEN ${keep} THEN ${column} END AS ${column}`);
	return `SELECT uuid, verdict, ${columns.join(", ")} FROM (SELECT *, (${verdict}) AS verdict ${PAGE_RANGE}) ORDER BY uuid`;
}

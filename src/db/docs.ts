import { and, asc, eq, gt, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { type LineMark, lineMarks } from "./jobs";
import { accounts, docGarbage, docOutbox, docs, uploads } from "./schema";

// Upload URLs, docs and the R2 objects nobody refers to any more. Every write here runs in the
// account's object, one at a time; the batches keep the account's doc_bytes equal to the
// sizes its rows hold (its uploads, its docs, and its moves' not yet finished). A twin's docs
// live in the twin owner's database; uploads, doc_garbage and doc_bytes in the attaching
// account's. No statement or batch here reads or writes both: a write whose rows have two
// homes is a DocMove (docs/files.md "Docs on another database").

export type UploadRow = typeof uploads.$inferSelect;
export type DocRow = typeof docs.$inferSelect;

// A list of values bound as one parameter (D1 binds at most 100 per statement).
const each = (values: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(values)}))`;

export function insertUpload(db: Database, row: UploadRow) {
	return db.insert(uploads).values(row);
}

export async function countLiveUploads(db: Database, account: string, at: number): Promise<number> {
	const [row] = await db
		.select({ n: sql<number>`count(*)` })
		.from(uploads)
		.where(and(eq(uploads.account, account), gt(uploads.validity_ts, at)));
	return row?.n ?? 0;
}

export function findUpload(db: Database, handler: string) {
	return db.select().from(uploads).where(eq(uploads.handler, handler)).get();
}

export function findUploads(db: Database, handlers: string[]) {
	return db
		.select()
		.from(uploads)
		.where(sql`${uploads.handler} IN ${each(handlers)}`);
}

export function docBytes(db: Database, account: string) {
	return db.select({ bytes: accounts.doc_bytes }).from(accounts).where(eq(accounts.uuid, account)).get();
}

const addBytes = (db: Database, account: string, bytes: number | ReturnType<typeof sql>) =>
	db
		.update(accounts)
		.set({ doc_bytes: sql`${accounts.doc_bytes} + ${bytes}` })
		.where(eq(accounts.uuid, account));

// The statements that make the account's dead PUTs' URLs (receiving, their lease past `at`)
// pending again, as a failed PUT leaves them: their objects to doc_garbage (a PUT cut short
// stores nothing, but a key costs nothing to forget), their lengths out of the account's count.
// All of the account's, or one handler's.
function releaseDead(db: Database, account: string, at: number, handler?: string) {
	const dead = and(
		eq(uploads.account, account),
		lte(uploads.lease_ts, at),
		eq(uploads.state, "receiving"),
		handler === undefined ? undefined : eq(uploads.handler, handler),
	);
	return [
		db
			.insert(docGarbage)
			.select(
				sql`SELECT ${uploads.object}, ${account}, ${at} FROM ${uploads} WHERE ${dead} AND ${uploads.object} IS NOT NULL`,
			),
		addBytes(db, account, sql`-(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${dead})`),
		db.update(uploads).set({ state: "pending", object: null, size: null, lease_ts: null }).where(dead),
	] as const;
}

export async function releaseDeadPuts(db: Database, account: string, at: number) {
	await db.batch([...releaseDead(db, account, at)]);
}

// A PUT begins: the row is claimed, and its length counted, only while it is pending, or held
// by a PUT whose lease has passed (that one is released first, in the same batch).
export async function claimUpload(
	db: Database,
	row: UploadRow,
	object: string,
	size: number,
	at: number,
	lease_ts: number,
): Promise<boolean> {
	const [, , , claimed] = await db.batch([
		...releaseDead(db, row.account, at, row.handler),
		db
			.update(uploads)
			.set({ state: "receiving", object, size, lease_ts })
			.where(and(eq(uploads.handler, row.handler), eq(uploads.state, "pending")))
			.returning({ handler: uploads.handler }),
		addBytes(
			db,
			row.account,
			sql`(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${uploads.handler} = ${row.handler} AND ${uploads.object} = ${object})`,
		),
	]);
	return claimed.length === 1;
}

// The PUT of `object` is alive: it holds the URL until `lease_ts`. False when it no longer holds
// it (released as dead, invalidated or expired meanwhile).
export async function renewUpload(db: Database, handler: string, object: string, lease_ts: number): Promise<boolean> {
	const renewed = await db
		.update(uploads)
		.set({ lease_ts })
		.where(and(eq(uploads.handler, handler), eq(uploads.state, "receiving"), eq(uploads.object, object)))
		.returning({ handler: uploads.handler });
	return renewed.length === 1;
}

export async function finishUpload(
	db: Database,
	handler: string,
	object: string,
	hash: string,
	content_type: string,
): Promise<UploadRow | undefined> {
	const [row] = await db
		.update(uploads)
		.set({ state: "uploaded", hash, lease_ts: null, content_type })
		.where(and(eq(uploads.handler, handler), eq(uploads.state, "receiving"), eq(uploads.object, object)))
		.returning();
	return row;
}

// A PUT that failed: the URL is pending again and its length no longer counted.
export async function reopenUpload(db: Database, account: string, handler: string, object: string) {
	const mine = and(eq(uploads.handler, handler), eq(uploads.state, "receiving"), eq(uploads.object, object));
	await db.batch([
		addBytes(db, account, sql`-(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${mine})`),
		db.update(uploads).set({ state: "pending", object: null, size: null, lease_ts: null }).where(mine),
	]);
}

// Deletes uploads (invalidated or expired): their objects go to doc_garbage and their sizes
// leave the account's count, in one batch.
export async function releaseUploads(db: Database, account: string, handlers: string[], at: number) {
	const these = and(eq(uploads.account, account), sql`${uploads.handler} IN ${each(handlers)}`);
	await db.batch([
		db
			.insert(docGarbage)
			.select(
				sql`SELECT ${uploads.object}, ${account}, ${at} FROM ${uploads} WHERE ${these} AND ${uploads.object} IS NOT NULL`,
			),
		addBytes(db, account, sql`-(SELECT coalesce(sum(${uploads.size}), 0) FROM ${uploads} WHERE ${these})`),
		db.delete(uploads).where(these),
	]);
}

// The account's uploads whose validity ended by `at`, oldest first, and when the next one ends.
export function expiredUploads(db: Database, account: string, at: number, limit: number) {
	return db
		.select({ handler: uploads.handler })
		.from(uploads)
		.where(and(eq(uploads.account, account), lte(uploads.validity_ts, at)))
		.orderBy(asc(uploads.validity_ts))
		.limit(limit);
}

// When the account's uploads next need the alarm: the earliest expiry, or the earliest lease of
// a PUT in flight (renewed as long as it streams).
export async function nextUploadExpiry(db: Database, account: string): Promise<number | undefined> {
	const [[expiry], [lease]] = await db.batch([
		db
			.select({ at: uploads.validity_ts })
			.from(uploads)
			.where(eq(uploads.account, account))
			.orderBy(asc(uploads.validity_ts))
			.limit(1),
		db
			.select({ at: uploads.lease_ts })
			.from(uploads)
			.where(and(eq(uploads.account, account), sql`${uploads.lease_ts} IS NOT NULL`))
			.orderBy(asc(uploads.lease_ts))
			.limit(1),
	]);
	const due = [expiry?.at, lease?.at].filter((t): t is number => typeof t === "number");
	return due.length ? Math.min(...due) : undefined;
}

// A twin's docs in name order after `after`, at most `limit` of them. Each account attaches at
// most MAX_TWIN_DOCS to a twin, so a twin may hold more than a page.
export function listTwinDocs(db: Database, twin: string, after: string, limit: number) {
	return db
		.select()
		.from(docs)
		.where(and(eq(docs.twin, twin), gt(docs.name, after)))
		.orderBy(asc(docs.name))
		.limit(limit);
}

// The docs one account attached to a twin (at most MAX_TWIN_DOCS), through (twin, account).
export function listAccountDocs(db: Database, twin: string, account: string) {
	return db
		.select()
		.from(docs)
		.where(and(eq(docs.twin, twin), eq(docs.account, account)));
}

export function findDoc(db: Database, twin: string, name: string) {
	return db
		.select()
		.from(docs)
		.where(and(eq(docs.twin, twin), eq(docs.name, name)))
		.get();
}

export function findDocByUuid(db: Database, uuid: string) {
	return db.select().from(docs).where(eq(docs.uuid, uuid)).get();
}

export async function takenNames(db: Database, twin: string, names: string[]): Promise<string[]> {
	const rows = await db
		.select({ name: docs.name })
		.from(docs)
		.where(and(eq(docs.twin, twin), sql`${docs.name} IN ${each(names)}`));
	return rows.map((row) => row.name);
}

// The docs one account attached to a twin: MAX_TWIN_DOCS counts per twin and attaching account,
// so that nobody can fill a twin's room for its owner's docs.
export async function countTwinDocs(db: Database, twin: string, account: string): Promise<number> {
	const [row] = await db
		.select({ n: sql<number>`count(*)` })
		.from(docs)
		.where(and(eq(docs.twin, twin), eq(docs.account, account)));
	return row?.n ?? 0;
}

// Why an attach batch failed, when a concurrent write of another account got there first.
export type AttachRace = "name_taken" | "twin_full";

// The INSERTs that file docs on their twin. The name's uniqueness and the twin's count hold in
// the statements themselves (another account's object may attach to the same twin at the same
// time): a taken name fails the unique index, and a doc past the count gets a NULL uuid, which
// fails its NOT NULL; either way the batch rolls back whole. With `once`, a doc's uuid, nothing
// is inserted when that doc is there already: the docs of one attach commit together, so a
// second run of the same attach inserts nothing.
function docInserts(db: Database, rows: DocRow[], maxPerTwin: number, once?: string) {
	const fresh =
		once === undefined ? sql`` : sql` WHERE NOT EXISTS (SELECT 1 FROM ${docs} WHERE ${docs.uuid} = ${once})`;
	return rows.map((row) => {
		const count = sql`(SELECT count(*) FROM ${docs} WHERE ${docs.twin} = ${row.twin} AND ${docs.account} = ${row.account})`;
		const uuid = sql`CASE WHEN ${count} < ${maxPerTwin} THEN ${row.uuid} END`;
		const description = row.description === null ? null : JSON.stringify(row.description);
		// INSERT ... SELECT names every column of the table, in the table's order.
		return db.insert(docs).select(
			sql`SELECT ${uuid}, ${row.twin}, ${row.name}, ${row.account}, ${row.object}, ${row.size}, ${row.hash}, ${row.storage_class},
				${description}, ${row.created_ts}, ${row.updated_ts}, ${row.content_type}${fresh}`,
		);
	});
}

async function raceOf(batch: Promise<unknown>): Promise<AttachRace | undefined> {
	try {
		await batch;
		return undefined;
	} catch (error) {
		const text = String((error as Error)?.cause ?? error);
		if (text.includes("UNIQUE")) return "name_taken";
		if (text.includes("NOT NULL")) return "twin_full";
		throw error;
	}
}

type Batch = [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]];

// Files the uploads as docs and consumes their handlers, all or none, when the twin's docs live
// in the attaching account's database.
export function attachDocs(
	db: Database,
	rows: DocRow[],
	handlers: string[],
	maxPerTwin: number,
): Promise<AttachRace | undefined> {
	const consume = db.delete(uploads).where(sql`${uploads.handler} IN ${each(handlers)}`);
	return raceOf(db.batch([...docInserts(db, rows, maxPerTwin), consume] as unknown as Batch));
}

// A doc write whose rows have two homes (docs/files.md "Docs on another database"): an attach
// to, or a removal from, a twin whose docs live in another database than the writing account's
// uploads, garbage and doc bytes. An attach carries its docs, the uploads it consumed (to put
// back when the twin's database refuses the docs) and the count it was checked against; a
// removal the docs it deletes, whose objects and sizes go back to the account once they are.
export type DocMove =
	| { kind: "attach"; docs: DocRow[]; uploads: UploadRow[]; perTwin: number }
	| { kind: "remove"; docs: Pick<DocRow, "uuid" | "object" | "size">[] };

// A move as its outbox row holds it.
export type QueuedMove = DocMove & { id: number; account: string; twin: string };

const outboxRow = (db: Database, account: string, twin: string, move: DocMove, at: number) => {
	const { kind, ...payload } = move;
	return db
		.insert(docOutbox)
		.values({ account, twin, kind, payload: JSON.stringify(payload), created_ts: at })
		.returning({ id: docOutbox.id });
};

// The first commit of an attach across databases, in the attaching account's: its uploads
// consumed and the move that files them as docs, in one batch. Answers the move's id. Once it
// commits the move is done, by the write or else by the alarm: a batch line's mark commits here.
export async function queueAttach(
	db: Database,
	account: string,
	twin: string,
	move: Extract<DocMove, { kind: "attach" }>,
	at: number,
	mark?: LineMark,
): Promise<number> {
	const handlers = move.uploads.map((row) => row.handler);
	const [, queued] = await db.batch([
		db.delete(uploads).where(sql`${uploads.handler} IN ${each(handlers)}`),
		outboxRow(db, account, twin, move, at),
		...lineMarks(db, mark, at),
	]);
	return queued[0]!.id;
}

// The first commit of a removal across databases, in the removing account's: the move alone
// (with a batch line's mark, as for an attach). Its objects and bytes change hands only once the
// docs are gone from the twin's database.
export async function queueRemoval(
	db: Database,
	account: string,
	twin: string,
	move: Extract<DocMove, { kind: "remove" }>,
	at: number,
	mark?: LineMark,
): Promise<number> {
	const [queued] = await db.batch([outboxRow(db, account, twin, move, at), ...lineMarks(db, mark, at)]);
	return queued[0]!.id;
}

// The account's moves not yet finished, in the order they committed.
export async function queuedMoves(db: Database, account: string, limit: number): Promise<QueuedMove[]> {
	const found = await db
		.select()
		.from(docOutbox)
		.where(eq(docOutbox.account, account))
		.orderBy(asc(docOutbox.id))
		.limit(limit);
	return found.map(
		(row) =>
			({ id: row.id, account: row.account, twin: row.twin, kind: row.kind, ...JSON.parse(row.payload) }) as QueuedMove,
	);
}

// An attach's docs filed in the twin's database, once (a run after one that committed inserts
// nothing and answers as it did), with the same conditions as attachDocs.
export function fileDocsOnce(db: Database, rows: DocRow[], maxPerTwin: number): Promise<AttachRace | undefined> {
	return raceOf(db.batch(docInserts(db, rows, maxPerTwin, rows[0]!.uuid) as unknown as Batch));
}

// A removal's docs deleted from the twin's database: the account's own on the twin, by uuid. A
// second run deletes nothing.
export async function deleteDocsOnce(db: Database, account: string, twin: string, uuids: string[]) {
	await db.delete(docs).where(ownOnTwin(account, twin, uuids));
}

// The statements of the move's last commit in the writing account's database run only while
// its row is there: that commit deletes it, so it happens once.
const queued = (id: number) => sql`EXISTS (SELECT 1 FROM ${docOutbox} WHERE ${docOutbox.id} = ${id})`;

// An attach finished: its docs are on the twin.
export async function closeMove(db: Database, id: number) {
	await db.delete(docOutbox).where(eq(docOutbox.id, id));
}

// An attach the twin's database refused: its uploads back as they were, handlers and objects,
// in the batch that ends the move. Their sizes never left the account's doc bytes.
export async function restoreUploads(db: Database, id: number, rows: UploadRow[]) {
	const u = (column: keyof UploadRow) => sql.raw(`json_extract(value, '$.${column}')`);
	await db.batch([
		// INSERT ... SELECT names every column of the table, in the table's order.
		db.insert(uploads).select(
			sql`SELECT ${u("handler")}, ${u("account")}, ${u("user")}, ${u("token_hash")}, ${u("state")}, ${u("object")}, ${u("size")},
					${u("hash")}, ${u("validity_ts")}, ${u("created_ts")}, ${u("lease_ts")}, ${u("content_type")}
					FROM json_each(${JSON.stringify(rows)}) WHERE ${queued(id)}`,
		),
		db.delete(docOutbox).where(eq(docOutbox.id, id)),
	]);
}

// A removal whose docs are gone from the twin's database: their objects to doc_garbage and their
// sizes out of the account's count, in the batch that ends the move.
export async function settleRemoval(
	db: Database,
	id: number,
	account: string,
	removed: Pick<DocRow, "object" | "size">[],
	at: number,
) {
	const objects = JSON.stringify(removed.map((row) => row.object));
	const bytes = removed.reduce((sum, row) => sum + row.size, 0);
	await db.batch([
		db.insert(docGarbage).select(sql`SELECT value, ${account}, ${at} FROM json_each(${objects}) WHERE ${queued(id)}`),
		db
			.update(accounts)
			.set({ doc_bytes: sql`${accounts.doc_bytes} - ${bytes}` })
			.where(and(eq(accounts.uuid, account), queued(id))),
		db.delete(docOutbox).where(eq(docOutbox.id, id)),
	]);
}

// The changed row, or undefined when the doc is gone. A batch line's mark commits with the change.
export async function setDocDescription(
	db: Database,
	uuid: string,
	description: DocRow["description"],
	at: number,
	mark?: LineMark,
): Promise<DocRow | undefined> {
	const [rows] = await db.batch([
		db.update(docs).set({ description, updated_ts: at }).where(eq(docs.uuid, uuid)).returning(),
		...lineMarks(db, mark, at),
	]);
	return rows[0];
}

// Docs of one account on a twin, by uuid. Found by primary key, one probe per uuid; account and
// twin only filter (the unary `+` keeps SQLite from ranging over the (twin, account) index
// instead, whose figure in Server-Timing would read one entry more or less as other twins' docs
// sort after this one).
const ownOnTwin = (account: string, twin: string, uuids: string[]) =>
	and(sql`+${docs.account} = ${account}`, sql`+${docs.twin} = ${twin}`, sql`${docs.uuid} IN ${each(uuids)}`);

// Deletes docs of one account on a twin (all of them, or those named), when the twin's docs live
// in the account's database: rows, their objects into doc_garbage and their sizes out of the
// account's count, in one batch, with a batch line's mark. Answers the rows.
export async function removeDocs(
	db: Database,
	account: string,
	twin: string,
	uuids: string[],
	at: number,
	mark?: LineMark,
) {
	const these = ownOnTwin(account, twin, uuids);
	const [, , removed] = await db.batch([
		db.insert(docGarbage).select(sql`SELECT ${docs.object}, ${account}, ${at} FROM ${docs} WHERE ${these}`),
		addBytes(db, account, sql`-(SELECT coalesce(sum(${docs.size}), 0) FROM ${docs} WHERE ${these})`),
		db.delete(docs).where(these).returning(),
		...lineMarks(db, mark, at),
	]);
	return removed as DocRow[];
}

export function garbageOf(db: Database, account: string, limit: number) {
	return db
		.select({ object: docGarbage.object })
		.from(docGarbage)
		.where(eq(docGarbage.account, account))
		.orderBy(asc(docGarbage.created_ts))
		.limit(limit);
}

export async function forgetGarbage(db: Database, objects: string[]) {
	await db.delete(docGarbage).where(sql`${docGarbage.object} IN ${each(objects)}`);
}

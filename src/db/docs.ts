import { and, asc, eq, gt, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { accounts, docGarbage, docs, uploads } from "./schema";

// Upload URLs, docs and the R2 objects nobody refers to any more. Every write here runs in the
// account's object, one at a time; the batches keep the account's doc_bytes equal to the
// sizes its rows hold.

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

// Files the uploads as docs and consumes their handlers, all or none. The name's uniqueness
// and the twin's count hold in the batch itself (another account's object may attach to the
// same twin at the same time): a taken name fails the unique index, and a doc past the count
// gets a NULL uuid, which fails its NOT NULL; either way the batch rolls back whole.
export async function attachDocs(
	db: Database,
	rows: DocRow[],
	handlers: string[],
	maxPerTwin: number,
): Promise<AttachRace | undefined> {
	const inserts = rows.map((row) => {
		const count = sql`(SELECT count(*) FROM ${docs} WHERE ${docs.twin} = ${row.twin} AND ${docs.account} = ${row.account})`;
		const uuid = sql`CASE WHEN ${count} < ${maxPerTwin} THEN ${row.uuid} END`;
		const description = row.description === null ? null : JSON.stringify(row.description);
		// INSERT ... SELECT names every column of the table, in the table's order.
		return db.insert(docs).select(
			sql`SELECT ${uuid}, ${row.twin}, ${row.name}, ${row.account}, ${row.object}, ${row.size}, ${row.hash}, ${row.storage_class},
				${description}, ${row.created_ts}, ${row.updated_ts}, ${row.content_type}`,
		);
	});
	try {
		const consume = db.delete(uploads).where(sql`${uploads.handler} IN ${each(handlers)}`);
		await db.batch([...inserts, consume] as unknown as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
		return undefined;
	} catch (error) {
		const text = String((error as Error)?.cause ?? error);
		if (text.includes("UNIQUE")) return "name_taken";
		if (text.includes("NOT NULL")) return "twin_full";
		throw error;
	}
}

export function setDocDescription(db: Database, uuid: string, description: DocRow["description"], at: number) {
	return db.update(docs).set({ description, updated_ts: at }).where(eq(docs.uuid, uuid)).returning().get();
}

// Deletes docs of one account on a twin (all of them, or those named): rows, their objects into
// doc_garbage and their sizes out of the account's count, in one batch. Answers the rows.
export async function removeDocs(db: Database, account: string, twin: string, uuids: string[], at: number) {
	// Found by primary key, one probe per uuid; account and twin only filter (the unary `+`
	// keeps SQLite from ranging over the (twin, account) index instead, whose figure in
	// Server-Timing would read one entry more or less as other twins' docs sort after this one).
	const these = and(
		sql`+${docs.account} = ${account}`,
		sql`+${docs.twin} = ${twin}`,
		sql`${docs.uuid} IN ${each(uuids)}`,
	);
	const [, , removed] = await db.batch([
		db.insert(docGarbage).select(sql`SELECT ${docs.object}, ${account}, ${at} FROM ${docs} WHERE ${these}`),
		addBytes(db, account, sql`-(SELECT coalesce(sum(${docs.size}), 0) FROM ${docs} WHERE ${these})`),
		db.delete(docs).where(these).returning(),
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

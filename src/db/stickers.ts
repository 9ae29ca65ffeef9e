import { and, asc, desc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { accounts, stickerCopies, stickerRecipients, stickers } from "./schema";

export type StickerRow = typeof stickers.$inferSelect;
export type StickerKey = Pick<StickerRow, "twin" | "account" | "color">;

// A sticker by its key, expired or not (the caller decides what an expired one is).
export async function findSticker(db: Database, key: StickerKey): Promise<StickerRow | undefined> {
	const s = stickers;
	const [row] = await db
		.select()
		.from(s)
		.where(and(eq(s.twin, key.twin), eq(s.account, key.account), eq(s.color, key.color)))
		.limit(1);
	return row;
}

// The account's stickers on one twin under the given colors, expired ones included.
export function stickersOn(db: Database, twin: string, account: string, colors: string[]) {
	const s = stickers;
	return db
		.select()
		.from(s)
		.where(and(eq(s.twin, twin), eq(s.account, account), inArray(s.color, colors)));
}

// How many stickers the account holds (expired ones not yet swept included), and how many of
// them are due: the difference is what MAX_STICKERS limits.
export async function stickerCount(db: Database, account: string, at: number): Promise<{ held: number; due: number }> {
	const s = stickers;
	const [[held], [due]] = await db.batch([
		db.select({ n: accounts.stickers }).from(accounts).where(eq(accounts.uuid, account)),
		db
			.select({ n: sql<number>`count(*)` })
			.from(s)
			.where(and(eq(s.account, account), lte(s.validity_ts, at))),
	]);
	return { held: held?.n ?? 0, due: due?.n ?? 0 };
}

// The account's due stickers, soonest first.
export function dueStickers(db: Database, account: string, at: number, limit: number): Promise<StickerRow[]> {
	const s = stickers;
	return db
		.select()
		.from(s)
		.where(and(eq(s.account, account), lte(s.validity_ts, at)))
		.orderBy(asc(s.validity_ts), asc(s.twin), asc(s.color))
		.limit(limit);
}

// The earliest validity_ts among the account's stickers: when its alarm is next due.
export async function nextExpiry(db: Database, account: string): Promise<number | undefined> {
	const s = stickers;
	const [row] = await db
		.select({ at: s.validity_ts })
		.from(s)
		.where(eq(s.account, account))
		.orderBy(asc(s.validity_ts))
		.limit(1);
	return row?.at;
}

// Whether a recipient uuid names a database other than the putting account's: its row there is
// a copy the account's outbox writes (docs/stickers.md "Across databases").
export type Elsewhere = (recipient: string) => boolean;

// The rows of new stickers, their recipients in this database, their copies' outbox rows for the
// others, and the account's count, for one batch. The recipients go in as one JSON list: a put
// may address 10 × 100 of them, far past the bound parameters a statement takes.
export function insertStickers(
	db: Database,
	account: string,
	rows: StickerRow[],
	elsewhere: Elsewhere,
): BatchItem<"sqlite">[] {
	const recipients = rows.flatMap((row) =>
		row.recipients
			.filter((recipient) => !elsewhere(recipient))
			.map((recipient) => [recipient, row.twin, row.account, row.color, row.created_ts, row.note, row.validity_ts]),
	);
	const r = stickerRecipients;
	return [
		...rows.map((row) => db.insert(stickers).values(row)),
		...(recipients.length === 0
			? []
			: [
					db.insert(r).select(sql`
			SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'),
				json_extract(value, '$[4]'), json_extract(value, '$[5]'), json_extract(value, '$[6]')
			FROM json_each(${JSON.stringify(recipients)})`),
				]),
		...copyStatements(db, account, rows, "put", elsewhere),
		db
			.update(accounts)
			.set({ stickers: sql`${accounts.stickers} + ${rows.length}` })
			.where(eq(accounts.uuid, account)),
	];
}

// Deletes stickers of one account, with their recipients in this database, the outbox rows that
// end their copies elsewhere, and the account's count.
export function deleteStickers(
	db: Database,
	account: string,
	rows: StickerRow[],
	elsewhere: Elsewhere,
): BatchItem<"sqlite">[] {
	const list = JSON.stringify(rows.map((k) => [k.twin, k.color]));
	const matches = (t: typeof stickers | typeof stickerRecipients) =>
		sql`${t.account} = ${account} AND (${t.twin}, ${t.color}) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(${list}))`;
	return [
		db.delete(stickerRecipients).where(matches(stickerRecipients)),
		db.delete(stickers).where(matches(stickers)),
		...copyStatements(db, account, rows, "end", elsewhere),
		db
			.update(accounts)
			.set({ stickers: sql`max(0, ${accounts.stickers} - ${rows.length})` })
			.where(eq(accounts.uuid, account)),
	];
}

// One outbox row per sticker with recipients elsewhere, in the order given, as one statement
// (an expiry run ends up to 100 stickers, past the bound parameters of a row each). None when
// every recipient is in this database.
function copyStatements(
	db: Database,
	account: string,
	rows: StickerRow[],
	change: CopyRow["change"],
	elsewhere: Elsewhere,
): BatchItem<"sqlite">[] {
	const copies = rows.flatMap((row) => {
		const away = row.recipients.filter(elsewhere);
		return away.length === 0 ? [] : [[row.twin, row.color, away, row.note, row.validity_ts, row.created_ts]];
	});
	if (copies.length === 0) return [];
	// INSERT ... SELECT names every column of the table, in the table's order: a NULL id is the
	// next one, so the rows keep the order of the list.
	return [
		db.insert(stickerCopies).select(sql`
			SELECT NULL, ${account}, json_extract(value, '$[0]'), json_extract(value, '$[1]'), ${change}, json_extract(value, '$[2]'),
				json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]')
			FROM json_each(${JSON.stringify(copies)}) ORDER BY key`),
	];
}

export type CopyRow = typeof stickerCopies.$inferSelect;

// The account's outbox rows of copies, oldest first.
export function pendingCopies(db: Database, account: string, limit: number): Promise<CopyRow[]> {
	const c = stickerCopies;
	return db.select().from(c).where(eq(c.account, account)).orderBy(asc(c.id)).limit(limit);
}

// What outbox rows do to the database of the recipients given, in their order, for one batch
// there: an end deletes each recipient's copy by key (twin, account, color, recipient), a put
// does so too and writes it again, so a row applied again leaves what it left the first time.
export function applyCopies(db: Database, changes: { row: CopyRow; recipients: string[] }[]): BatchItem<"sqlite">[] {
	const r = stickerRecipients;
	return changes.flatMap(({ row, recipients }) => {
		const list = JSON.stringify(recipients);
		const copies = db
			.delete(r)
			.where(
				and(
					eq(r.twin, row.twin),
					eq(r.account, row.account),
					eq(r.color, row.color),
					sql`${r.recipient} IN (SELECT value FROM json_each(${list}))`,
				),
			);
		if (row.change === "end") return [copies];
		return [
			copies,
			db.insert(r).select(sql`
				SELECT value, ${row.twin}, ${row.account}, ${row.color}, ${row.created_ts}, ${row.note}, ${row.validity_ts}
				FROM json_each(${list})`),
		];
	});
}

// Deletes outbox rows once applied.
export function deleteCopies(db: Database, account: string, ids: number[]) {
	const c = stickerCopies;
	return db
		.delete(c)
		.where(and(eq(c.account, account), sql`${c.id} IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`));
}

// D1 takes at most five terms in a compound SELECT.
const MAX_TERMS = 5;

// Stickers on a twin addressed to any of `recipients` (put by the accounts of `accountsIn`,
// or by any), unexpired, newest first (created_ts, account, color, descending), read from
// `d1`, the recipients' database, which holds their rows whoever put the stickers. Each address,
// with each account, is one index range read newest first; the ranges of one address go
// five to a statement, whose compound SELECT SQLite merges as it reads them, stopping at
// `limit`. So the read ends after `limit` entries a statement (one for any account, two for
// ten accounts, per address), whatever else is addressed to the caller, and still holds the
// newest `limit` stickers: one addressed to several of the addresses comes once per address,
// and the caller drops the repeats.
export async function stickersOnTwin(
	d1: D1Database,
	twin: string,
	recipients: string[],
	accountsIn: string[] | null,
	at: number,
	limit: number,
): Promise<Listed[]> {
	const groups =
		accountsIn === null
			? [[null]]
			: Array.from({ length: Math.ceil(accountsIn.length / MAX_TERMS) }, (_, i) =>
					accountsIn.slice(i * MAX_TERMS, (i + 1) * MAX_TERMS),
				);
	const statements = recipients.flatMap((recipient) =>
		groups.map((accounts) => newestOnTwin(d1, { twin, recipient, accounts, at, limit })),
	);
	if (statements.length === 0) return [];
	const answers = await d1.batch<Listed>(statements);
	return answers.flatMap((answer) => answer.results).sort(newerFirst);
}

type Ranges = { twin: string; recipient: string; accounts: (string | null)[]; at: number; limit: number };

function newestOnTwin(d1: D1Database, { twin, recipient, accounts, at, limit }: Ranges): D1PreparedStatement {
	const params: unknown[] = [twin, at, limit, recipient];
	const terms = accounts.map((account) => {
		const [index, by] =
			account === null
				? ["sticker_recipients_twin", ""]
				: ["sticker_recipients_twin_account", ` AND r.account = ?${params.push(account)}`];
		return (
			"SELECT r.twin AS twin, r.account AS account, r.color AS color, r.note AS note, r.validity_ts AS validity_ts, r.created_ts AS created_ts " +
			`FROM sticker_recipients AS r INDEXED BY ${index} ` +
			`WHERE r.recipient = ?4 AND r.twin = ?1${by} AND r.validity_ts > ?2`
		);
	});
	return d1
		.prepare(`${terms.join(" UNION ALL ")} ORDER BY created_ts DESC, account DESC, color DESC LIMIT ?3`)
		.bind(...params);
}

function newerFirst(a: Listed, b: Listed): number {
	if (a.created_ts !== b.created_ts) return b.created_ts - a.created_ts;
	if (a.account !== b.account) return a.account < b.account ? 1 : -1;
	return a.color === b.color ? 0 : a.color < b.color ? 1 : -1;
}

export type Listed = Pick<StickerRow, "twin" | "account" | "color" | "note" | "validity_ts" | "created_ts">;

export type ListFilter = { color?: string; account?: string; ge?: number; le?: number; at: number };

// The index whose range holds exactly the entries a filter keeps, newest first: past the
// recipient, the putting account and the color when the filter names them, then created_ts.
function listIndex(filter: ListFilter) {
	if (filter.account === undefined)
		return filter.color === undefined ? "sticker_recipients_newest" : "sticker_recipients_color";
	return filter.color === undefined ? "sticker_recipients_account" : "sticker_recipients_account_color";
}

// The newest stickers addressed to one recipient, descending (created_ts, account, twin,
// color), unexpired, as the filter asks: one index range that reads at most `limit` entries
// (and those of expired stickers not yet swept), each with its recipient row.
export function stickersAddressedTo(db: Database, recipient: string, filter: ListFilter, limit: number) {
	const r = stickerRecipients;
	// Its columns through sql: drizzle knows no table named in a FROM it does not build.
	return db
		.select({
			twin: sql<string>`${r.twin}`,
			account: sql<string>`${r.account}`,
			color: sql<string>`${r.color}`,
			note: sql<string | null>`${r.note}`,
			validity_ts: sql<number>`${r.validity_ts}`,
			created_ts: sql<number>`${r.created_ts}`,
		})
		.from(sql`${r} INDEXED BY ${sql.raw(listIndex(filter))}`)
		.where(
			and(
				eq(r.recipient, recipient),
				filter.ge === undefined ? undefined : sql`${r.created_ts} >= ${filter.ge}`,
				filter.le === undefined ? undefined : sql`${r.created_ts} <= ${filter.le}`,
				filter.color === undefined ? undefined : eq(r.color, filter.color),
				filter.account === undefined ? undefined : eq(r.account, filter.account),
				gt(r.validity_ts, filter.at),
			),
		)
		.orderBy(desc(r.created_ts), desc(r.account), desc(r.twin), desc(r.color))
		.limit(limit);
}

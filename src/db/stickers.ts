import { and, asc, desc, eq, gt, inArray, lte, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "./client";
import { accounts, stickerRecipients, stickers } from "./schema";

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
	return db.select().from(s).where(and(eq(s.twin, twin), eq(s.account, account), inArray(s.color, colors)));
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
	const [row] = await db.select({ at: s.validity_ts }).from(s).where(eq(s.account, account)).orderBy(asc(s.validity_ts)).limit(1);
	return row?.at;
}

// The rows of new stickers, their recipients and the account's count, for one batch. The
// recipients go in as one JSON list: a put may address 10 × 100 of them, far past the bound
// parameters a statement takes.
export function insertStickers(db: Database, account: string, rows: StickerRow[]): BatchItem<"sqlite">[] {
	const recipients = rows.flatMap((row) => row.recipients.map((recipient) => [recipient, row.twin, row.account, row.color, row.created_ts]));
	const r = stickerRecipients;
	return [
		...rows.map((row) => db.insert(stickers).values(row)),
		db.insert(r).select(sql`
			SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]'), json_extract(value, '$[4]')
			FROM json_each(${JSON.stringify(recipients)})`),
		db
			.update(accounts)
			.set({ stickers: sql`${accounts.stickers} + ${rows.length}` })
			.where(eq(accounts.uuid, account)),
	];
}

// Deletes stickers of one account, with their recipients and the account's count.
export function deleteStickers(db: Database, account: string, keys: StickerKey[]): BatchItem<"sqlite">[] {
	const list = JSON.stringify(keys.map((k) => [k.twin, k.color]));
	const matches = (t: typeof stickers | typeof stickerRecipients) =>
		sql`${t.account} = ${account} AND (${t.twin}, ${t.color}) IN (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(${list}))`;
	return [
		db.delete(stickerRecipients).where(matches(stickerRecipients)),
		db.delete(stickers).where(matches(stickers)),
		db
			.update(accounts)
			.set({ stickers: sql`max(0, ${accounts.stickers} - ${keys.length})` })
			.where(eq(accounts.uuid, account)),
	];
}

// Stickers on a twin addressed to any of `recipients`, with their recipient rows: at most
// `limit`, newest first. The caller drops duplicates (a sticker addressed to
// a user and its role comes twice). Expired ones are left out.
export function stickersFor(db: Database, twin: string, recipients: string[], accountsIn: string[] | null, at: number, limit: number) {
	const s = stickers;
	const r = stickerRecipients;
	return db
		.select({ twin: s.twin, account: s.account, color: s.color, note: s.note, validity_ts: s.validity_ts, created_ts: s.created_ts })
		.from(r)
		.innerJoin(s, and(eq(s.twin, r.twin), eq(s.account, r.account), eq(s.color, r.color)))
		.where(and(inArray(r.recipient, recipients), eq(r.twin, twin), accountsIn === null ? undefined : inArray(r.account, accountsIn), gt(s.validity_ts, at)))
		.orderBy(desc(r.created_ts), desc(r.account), desc(r.color))
		.limit(limit);
}

export type Listed = Pick<StickerRow, "twin" | "account" | "color" | "note" | "validity_ts" | "created_ts">;

export type ListFilter = { color?: string; account?: string; ge?: number; le?: number; at: number };

// The newest stickers addressed to one recipient, descending (created_ts, account, twin,
// color), unexpired, as the filter asks: one range of the (recipient, created_ts, ...) index
// and one sticker row per item.
export function stickersAddressedTo(db: Database, recipient: string, filter: ListFilter, limit: number) {
	const s = stickers;
	const r = stickerRecipients;
	return db
		.select({ twin: s.twin, account: s.account, color: s.color, note: s.note, validity_ts: s.validity_ts, created_ts: s.created_ts })
		.from(sql`${r} INDEXED BY sticker_recipients_newest`)
		.innerJoin(s, and(eq(s.twin, r.twin), eq(s.account, r.account), eq(s.color, r.color)))
		.where(
			and(
				eq(r.recipient, recipient),
				filter.ge === undefined ? undefined : sql`${r.created_ts} >= ${filter.ge}`,
				filter.le === undefined ? undefined : sql`${r.created_ts} <= ${filter.le}`,
				filter.color === undefined ? undefined : eq(r.color, filter.color),
				filter.account === undefined ? undefined : eq(r.account, filter.account),
				gt(s.validity_ts, filter.at),
			),
		)
		.orderBy(desc(r.created_ts), desc(r.account), desc(r.twin), desc(r.color))
		.limit(limit);
}

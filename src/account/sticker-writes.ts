import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../db/client";
import type { D1Meter } from "../db/meter";
import { type LineMark, lineMarks, markIn, markLine } from "../db/jobs";
import { runBatch } from "../db/ledgers";
import { logLine, logStatements } from "../db/log";
import { fanOut, insertSight, type Published, streamPublication, truncationLog } from "../db/outbox";
import {
	applyCopies,
	type CopyRow,
	deleteCopies,
	deleteStickers,
	dueStickers,
	type Elsewhere,
	findSticker,
	insertStickers,
	nextExpiry,
	pendingCopies,
	stickerCount,
	type StickerKey,
	type StickerRow,
	stickersOn,
} from "../db/stickers";
import { database } from "../db/client";
import { groupByHome, homeDatabase, homeOf, shardDatabase } from "../db/shards";
import { movingBuckets } from "../db/moves";
import { bucketOfId } from "../base/shards";
import { now } from "../base/time";
import { type Host, RETRY_SECONDS, TIMER } from "./host";
import { findTwins, type TwinRow } from "../db/twins";
import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import type { Json } from "../rules/ast";
import type { Sight } from "../rules/reader-filter";

// An account's sticker writes. The sticker's account's object runs them one at a time, with
// its alarm's expiry runs: a sticker is put once and ends once, removed or expired, and the
// event of its end commits in the same D1 batch as its deletion, so a retried alarm, a
// restarted object or a remove racing the expiry finds it gone.

export type StickerEvent = "on_put" | "on_remove" | "on_expire";
export type StickerInput = Record<
	string,
	{ note: string | null; recipients: string[]; validity_ts?: number; publish: Partial<Record<StickerEvent, string[]>> }
>;

// The longest a sticker may live, and its default: a year.
export const MAX_STICKER_SECONDS = 31_536_000;
// Due stickers one expiry run deletes; the alarm comes back at once for the rest.
export const EXPIRY_RUN = 100;

const TRIGGERS = { on_put: "sticker.put", on_remove: "sticker.removed", on_expire: "sticker.expired" } as const;

// What a write needs besides its rows: the Worker's environment (which database each id names),
// the unmetered database of the account (for what the caller may not see the cost of), the bound
// of a message's fan-out, what runs before a batch with messages commits (arming the account's
// drain), and what runs before a batch with copies to write elsewhere commits (arming theirs).
export type StickerContext = {
	env: Env;
	plain: Database;
	fanOut: number;
	beforeCommit: () => Promise<void>;
	beforeCopies: () => Promise<void>;
};

// A recipient whose uuid names another database than the account's gets its row there as a
// copy, through the account's outbox of copies (docs/stickers.md "Across databases").
export function elsewhereOf(env: Env, account: string): Elsewhere {
	const home = homeOf(env, account);
	return (recipient) => homeOf(env, recipient) !== home;
}

// The record get_sticker and put_sticker answer: publish lists the given events only.
export function stickerRecord(row: StickerRow) {
	return {
		note: row.note,
		recipients: row.recipients,
		validity_ts: row.validity_ts,
		created_ts: row.created_ts,
		publish: row.publish,
	};
}

// Whether the caller is addressed by a sticker: its user, its role or its account.
export function isRecipient(
	caller: Pick<Caller, "account" | "user" | "role">,
	row: Pick<StickerRow, "recipients">,
): boolean {
	return (
		row.recipients.includes(caller.user) ||
		row.recipients.includes(caller.role) ||
		row.recipients.includes(caller.account)
	);
}

export async function putStickers(
	db: Database,
	meter: D1Meter,
	writer: Caller,
	twin: string,
	input: StickerInput,
	limit: number,
	c: StickerContext,
	at: number,
	mark?: LineMark,
) {
	const account = writer.account;
	const colors = Object.keys(input);
	// An expired color not yet swept is absent to the put, which expires it first, as the alarm
	// would: its rows cost the caller nothing, like any other expired sticker.
	const found = await stickersOn(c.plain, twin, account, colors);
	const expired = found.filter((row) => row.validity_ts <= at);
	await meter.sighted(
		async () => found,
		(row) => row.validity_ts > at,
	);
	const taken = found.filter((row) => row.validity_ts > at).map((row) => row.color);
	if (taken.length) {
		const details = taken.map((color) => ({
			path: `stickers.${color}`,
			message: "The account has a sticker of this color on the twin",
		}));
		throw new ApiError("conflict", {
			description: `The account already has ${taken.join(", ")} on this twin`,
			details,
		});
	}
	// Unexpired stickers of the account, on any twin: counted without the caller's meter, since
	// it spans twins the caller may not see.
	const count = await stickerCount(c.plain, account, at);
	if (count.held - count.due + colors.length > limit) {
		throw new ApiError("sticker_limit", {
			description: `The account would hold more than ${limit} unexpired stickers, its limit (MAX_STICKERS)`,
		});
	}
	const rows: StickerRow[] = colors.map((color) => ({
		twin,
		account,
		color,
		created_ts: at,
		...input[color],
		validity_ts: input[color].validity_ts ?? at + MAX_STICKER_SECONDS,
	}));
	const statements: BatchItem<"sqlite">[] = [];
	const elsewhere = elsewhereOf(c.env, account);
	const ending = expired.length ? await endStatements(c, c.plain, account, expired, "on_expire", at) : undefined;
	if (ending) statements.push(...ending.statements);
	statements.push(...insertStickers(db, account, rows, elsewhere));
	const put = await publication(c, db, account, rows, "on_put", at);
	statements.push(...put.statements);
	// A batch line's mark commits with the stickers (their copies elsewhere follow from this batch).
	statements.push(...lineMarks(db, mark, at));
	const copied = Boolean(ending?.copied) || rows.some((row) => row.recipients.some(elsewhere));
	if (put.published || ending?.published) await c.beforeCommit();
	if (copied) await c.beforeCopies();
	await runBatch(db, statements);
	const stickers = Object.fromEntries(rows.map((row) => [row.color, stickerRecord(row)]));
	return {
		uuid: twin,
		stickers,
		published: put.published || Boolean(ending?.published),
		expired: expired.length,
		copied,
	};
}

// One sticker of `account`, removed by a recipient that sees its twin (the Worker checked the
// twin). For anyone else, and when absent or expired, 404102: a non-recipient's lookup costs
// what an absent sticker's does. A batch line's mark commits with the removal when the sticker's
// database is the remover's job's; a remover of another database marks its line there, on its
// own, right after the removal (db/jobs.ts markLine).
export async function removeSticker(
	db: Database,
	meter: D1Meter,
	remover: Caller,
	key: StickerKey,
	c: StickerContext,
	at: number,
	mark?: LineMark,
) {
	const row = await meter.sightedOne(
		() => findSticker(c.plain, key),
		(r) => r.validity_ts > at && isRecipient(remover, r),
	);
	if (!row) throw new ApiError("not_found", { description: "No such sticker" });
	// Its rows go unmetered: what they cost (how many recipients it had) is not the remover's to see.
	const end = await endStatements(c, c.plain, key.account, [row], "on_remove", at);
	if (end.published) await c.beforeCommit();
	if (end.copied) await c.beforeCopies();
	const here = markIn(c.env, mark, key.account);
	await runBatch(db, [...end.statements, ...lineMarks(db, here, at)]);
	if (mark && !here) await markLine(database(homeDatabase(c.env, mark.job)), mark, at);
	return {
		uuid: key.twin,
		account: row.account,
		note: row.note,
		validity_ts: row.validity_ts,
		created_ts: row.created_ts,
		published: end.published,
		copied: end.copied,
	};
}

// One expiry run of the alarm: up to EXPIRY_RUN due stickers deleted, each with its
// sticker.expired messages, its log line and its copies' end, in one batch. Answers how many,
// and whether messages or copies were written.
export async function expireStickers(c: StickerContext, account: string, at: number) {
	const db = c.plain;
	const due = await dueStickers(db, account, at, EXPIRY_RUN);
	if (due.length === 0) return { expired: 0, published: false, copied: false, more: false };
	const end = await endStatements(c, db, account, due, "on_expire", at);
	if (end.published) await c.beforeCommit();
	if (end.copied) await c.beforeCopies();
	await runBatch(db, end.statements);
	return { expired: due.length, published: end.published, copied: end.copied, more: due.length === EXPIRY_RUN };
}

// The end of stickers, removed or expired: their rows, their messages, the outbox rows that end
// their copies elsewhere and, for an expiry, the account's log lines.
async function endStatements(
	c: StickerContext,
	db: Database,
	account: string,
	rows: StickerRow[],
	event: "on_remove" | "on_expire",
	at: number,
) {
	const elsewhere = elsewhereOf(c.env, account);
	const statements = [...deleteStickers(db, account, rows, elsewhere)];
	const ended = await publication(c, db, account, rows, event, at);
	statements.push(...ended.statements);
	if (event === "on_expire") {
		const lines = rows.map((row) => logLine("Sticker expired", { twin: row.twin, color: row.color }, at));
		statements.push(...logStatements(db, account, at, lines));
	}
	const copied = rows.some((row) => row.recipients.some(elsewhere));
	return { statements, published: ended.published, copied };
}

// The messages of one event of stickers, to the topics each lists for it: one per (sticker,
// topic) to webhooks through the outbox, one stream row per sticker, with what a confined
// reader's rules read of it (its twin, read unmetered in its owner's database, as the event
// leaves it; its account and recipients). A sticker without topics for the event publishes nothing.
async function publication(
	c: StickerContext,
	db: Database,
	account: string,
	rows: StickerRow[],
	event: StickerEvent,
	at: number,
) {
	const limit = c.fanOut;
	const publishing = rows.filter((row) => (row.publish[event] ?? []).length > 0);
	if (publishing.length === 0) return { statements: [], published: false };
	const twins = new Map(
		(await twinsWhereTheyLive(c.env, [...new Set(publishing.map((row) => row.twin))])).map((twin) => [twin.uuid, twin]),
	);
	const statements: BatchItem<"sqlite">[] = [];
	const sources: Published[][] = publishing.map((row) => {
		const twin = twins.get(row.twin);
		let id: string | null = null;
		if (twin) {
			const sight: Sight = {
				kind: "sticker",
				twin: { uuid: twin.uuid, owner: twin.owner, status: twin.status, description: twin.description as Json },
				account,
				recipients: row.recipients,
			};
			id = crypto.randomUUID();
			statements.push(insertSight(db, { id, account, data: JSON.stringify(sight), at }));
		}
		return (row.publish[event] ?? []).map((topic) => ({ twin: row.twin, topic, event: eventOf(row), sight: id }));
	});
	const p = { account, trigger: TRIGGERS[event], messages: sources.flat(), at, limit };
	statements.push(fanOut(db, p), ...truncationLog(db, p), streamPublication(db, { ...p, sources }));
	return { statements, published: true };
}

// A sticker event's body, keys in the documented order.
function eventOf(row: StickerRow) {
	return { color: row.color, note: row.note, validity_ts: row.validity_ts, created_ts: row.created_ts };
}

// Twins of any account, each read in its owner's database (its uuid names it): one query per
// database that holds some.
async function twinsWhereTheyLive(env: Env, uuids: string[]): Promise<TwinRow[]> {
	const found = await Promise.all(
		[...groupByHome(env, uuids)].map(([binding, list]) => findTwins(database(shardDatabase(env, binding)), list)),
	);
	return found.flat();
}

// When the first of the stickers a put makes expires: beside the put, the stickers timer is due
// by then (a default validity, a year, is later than any given one; a year from now is early
// enough).
export function earliestExpiry(input: StickerInput, at: number): number {
	return Math.min(...Object.values(input).map((sticker) => sticker.validity_ts ?? at + MAX_STICKER_SECONDS));
}

// The context of the account's sticker writes, in its object.
export function stickerContext(host: Host, account: string): StickerContext {
	return {
		env: host.env,
		plain: database(host.home()),
		fanOut: Number(host.env.MAX_SUBSCRIPTIONS),
		beforeCommit: () => host.armDrain(account),
		beforeCopies: () => host.timers.by(TIMER.stickerCopies, account, now() + COPIES_GRACE_SECONDS),
	};
}

// The stickers timer's step: every sticker due ends, serialized with the writes, until none is
// left due; then the timer is due at the next expiry (none when the account has no sticker).
// Messages the expiries published that the drain could not hand on leave the drain due; copies
// the run could not end elsewhere leave the copies' timer due (set before the run committed).
export async function expiryStep(host: Host, account: string): Promise<number | undefined> {
	const outcome = await host.serialized(async () => {
		const c = stickerContext(host, account);
		let left = false;
		for (;;) {
			const at = now();
			const run = await expireStickers(c, account, at);
			if (run.expired) host.usage.add(at, null, { stickers_expired: run.expired });
			if (run.copied) await drainCopies(host.env, account);
			if (run.published && (await host.drain(account))) left = true;
			if (!run.more) break;
		}
		if (left) await host.armDrain(account);
		return nextExpiry(c.plain, account);
	});
	return outcome.ok ? outcome.value : now() + RETRY_SECONDS;
}

// How soon after a commit with copies to write elsewhere their timer is due, and how soon a
// drain that failed is tried again: the write drains them itself right after its commit, so
// the timer only acts after a crash or a failure, and still within the 5 seconds in which a
// recipient elsewhere sees a put and stops seeing its end (docs/stickers.md "Across databases").
export const COPIES_GRACE_SECONDS = 2;
// Outbox rows one turn of the drain applies (a put writes at most 10, an expiry run 100): two
// statements each at most, so a turn's batch to one database stays at 100 statements.
const COPIES_PAGE = 50;

// Applies the account's outbox of copies, oldest first, to the databases the recipients name,
// and deletes the rows applied. Each turn writes one batch per database (the rows' changes in
// their order), then deletes its rows in the account's: a turn that fails anywhere leaves its
// rows, and the next applies them again, by key, to the same end. Runs only inside the account's
// serialized step, so two drains never interleave. Answers whether rows are left.
export async function drainCopies(env: Env, account: string): Promise<boolean> {
	try {
		const home = database(homeDatabase(env, account));
		for (;;) {
			const page = await pendingCopies(home, account, COPIES_PAGE);
			if (page.length === 0) return false;
			// A copy bound for a bucket that is moving waits for the move, with every row after it,
			// so that the copies still apply in commit order (docs/scaling.md, "Moving a bucket").
			const moving = await movingBuckets(homeDatabase(env, account));
			if (page.some((row) => row.recipients.some((id) => moving.has(bucketOfId(id) ?? -1)))) return true;
			const byHome = new Map<string, { row: CopyRow; recipients: string[] }[]>();
			for (const row of page) {
				for (const [binding, recipients] of groupByHome(env, row.recipients))
					byHome.set(binding, [...(byHome.get(binding) ?? []), { row, recipients }]);
			}
			await Promise.all(
				[...byHome].map(([binding, changes]) => {
					const db = database(shardDatabase(env, binding));
					return runBatch(db, applyCopies(db, changes));
				}),
			);
			const applied = page.map((row) => row.id);
			await deleteCopies(home, account, applied);
			if (page.length < COPIES_PAGE) return false;
		}
	} catch (error) {
		console.error(JSON.stringify({ stickerCopies: account, error: String(error) }));
		return true;
	}
}

// The copies timer's step: the outbox drained, or tried again shortly.
export async function copiesStep(host: Host, account: string): Promise<number | undefined> {
	const outcome = await host.serialized(() => drainCopies(host.env, account));
	return outcome.ok && !outcome.value ? undefined : now() + COPIES_GRACE_SECONDS;
}

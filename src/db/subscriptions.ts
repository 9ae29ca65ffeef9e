import { and, asc, eq, getTableColumns, gt, inArray, lte, or, type SQL, sql } from "drizzle-orm";
import type { Database } from "./client";
import { roles, subscriptions, users, webhookDeliveries } from "./schema";

export type SubscriptionRow = typeof subscriptions.$inferSelect;

// What ending a subscription sets, however it ends (an unsubscribe, its owner's delete, its user's
// deletion, a grant withdrawn): unsubscribed, and the secrets it kept dropped with it.
export const ENDED_SUBSCRIPTION = {
	status: "unsubscribed",
	sealed_token: null,
	sealed_key: null,
	sealed_previous_key: null,
	previous_key_until: null,
} as const;
// A new row: its confirmation counters are set by the statement that inserts it.
export type NewSubscription = Omit<SubscriptionRow, "confirmation_ts" | "confirmations">;
type Status = SubscriptionRow["status"];

// A confirmation message counts against MAX_SUBSCRIPTIONS for a day after it is issued,
// whatever becomes of its subscription: it is sent at once (and retried for up to a day), so
// letting it expire or ending it must not make room for another. The limit so bounds the
// confirmation messages an account has the service send in any day, besides its live
// subscriptions. A subscription's messages count until a day after the last of them; a live
// one counts once at least.
export const CONFIRMATION_COUNTED_SECONDS = 86_400;

// Ended subscriptions are kept this long after their last change, then pruned by the
// account's later subscribes, up to 10 in each database each (more than the one row a subscribe
// adds, so pruning keeps up wherever the rows are): an account keeps at most what it can make in
// that time, besides its live ones.
export const PRUNED_AFTER_SECONDS = 30 * 86_400;
const PRUNED_PER_SUBSCRIBE = 10;

function isLive(at: number): SQL {
	const s = subscriptions;
	return sql`(${s.status} IN ('pending', 'confirmed') AND ${s.validity_ts} > ${at})`;
}

function isRecent(at: number): SQL {
	return sql`${subscriptions.confirmation_ts} > ${at - CONFIRMATION_COUNTED_SECONDS}`;
}

// What the account's subscriptions other than `except` count against the limit. Two index
// ranges (live ones, and those with recent messages), so ended subscriptions cost no reads.
function counted(account: string, at: number, except: string | null): SQL {
	const s = subscriptions;
	const other = except === null ? sql`` : sql` AND ${s.uuid} <> ${except}`;
	return sql`((SELECT coalesce(sum(CASE WHEN ${isRecent(at)} THEN max(${s.confirmations}, 1) ELSE 1 END), 0) FROM ${s}
			WHERE ${s.account} = ${account} AND ${isLive(at)}${other})
		+ (SELECT coalesce(sum(${s.confirmations}), 0) FROM ${s}
			WHERE ${s.account} = ${account} AND ${isRecent(at)} AND NOT ${isLive(at)}${other}))`;
}

// The confirmations of a row once one more is issued at `at`, in the terms of the statement
// that issues it: one more than before if the last was less than a day ago, else one.
function confirmationsAfterIssue(at: number): SQL {
	return sql`(CASE WHEN ${isRecent(at)} THEN ${subscriptions.confirmations} + 1 ELSE 1 END)`;
}

// The rows a subscribe prunes, oldest first: ended (or lapsed) and unchanged for
// PRUNED_AFTER_SECONDS, which also puts their confirmation messages past counting. updated_ts
// is never before created_ts, so the same cut-off on created_ts lets the listing index find them.
function prunable(account: string, at: number): SQL {
	const s = subscriptions;
	const before = at - PRUNED_AFTER_SECONDS;
	return sql`SELECT ${s.uuid} FROM ${s}
		WHERE ${s.account} = ${account} AND ${s.created_ts} < ${before} AND ${s.updated_ts} < ${before} AND NOT ${isLive(at)}
		ORDER BY ${s.created_ts}, ${s.uuid} LIMIT ${PRUNED_PER_SUBSCRIBE}`;
}

// What the account's subscriptions in one database count against the limit (the limit counts
// them over every database, docs/scaling.md), after pruning there a few of its long-ended ones
// with their deliveries: one batch, the one round trip a subscribe makes to each database.
export async function pruneAndCount(db: Database, account: string, at: number): Promise<number> {
	const pruned = prunable(account, at);
	const [, , count] = await db.batch([
		db.delete(webhookDeliveries).where(sql`${webhookDeliveries.subscription} IN (${pruned})`),
		db.delete(subscriptions).where(sql`${subscriptions.uuid} IN (${pruned})`),
		countOf(db, account, at, null),
	]);
	return count[0]?.n ?? 0;
}

// The count as a statement a batch can hold: one row, one column.
function countOf(db: Database, account: string, at: number, except: string | null) {
	return db.select({ n: sql<number>`${counted(account, at, except)}`.mapWith(Number).as("n") }).from(sql`(SELECT 1)`);
}

// What the account's subscriptions in one database other than `except` count against the limit.
export async function countedIn(db: Database, account: string, at: number, except: string | null): Promise<number> {
	const [row] = await countOf(db, account, at, except);
	return row?.n ?? 0;
}

// Inserts the row (its confirmation message counted from `at`), only while `also` holds when
// it is written (a grant of another account's topic): answers undefined when it does not. The
// limit is the caller's to check first, where the subscriber's subscribes run one at a time.
export async function insertSubscription(db: Database, row: NewSubscription, at: number, also?: SQL) {
	const full: SubscriptionRow = { ...row, confirmation_ts: at, confirmations: 1 };
	// INSERT ... SELECT names every column of the table, in the table's order.
	const values: SQL[] = Object.entries(getTableColumns(subscriptions)).map(([key, column]) => {
		const value = (full as Record<string, unknown>)[key] ?? column.default ?? null;
		return value === null ? sql`NULL` : sql`${column.mapToDriverValue(value)}`;
	});
	const [inserted] = await db
		.insert(subscriptions)
		.select(sql`SELECT ${sql.join(values, sql`, `)}${also ? sql` WHERE ${also}` : sql``}`)
		.returning();
	return inserted;
}

// Issues a new confirmation message for a pending or failed subscription (its message, token
// and counters), only while it still has the status and message it was read with, and while
// the account's count with this message stays within `limit`: `others` is what its other
// subscriptions count, over every database, read in the same serialized step of the account's
// object, so concurrent resends cannot pass it. Answers undefined when any of that fails.
export async function reissueConfirmation(
	db: Database,
	row: SubscriptionRow,
	changes: Pick<SubscriptionRow, "message" | "token_hash" | "sealed_token">,
	others: number,
	limit: number,
	at: number,
) {
	const s = subscriptions;
	const [updated] = await db
		.update(s)
		.set({
			...changes,
			status: "pending",
			attempts: 0,
			delivered_ts: null,
			failure_reason: null,
			confirmations: confirmationsAfterIssue(at),
			confirmation_ts: at,
			updated_ts: at,
		})
		.where(
			and(
				eq(s.uuid, row.uuid),
				eq(s.status, row.status),
				eq(s.message, row.message),
				sql`${others} + ${confirmationsAfterIssue(at)} <= ${limit}`,
			),
		)
		.returning();
	return updated;
}

export async function findSubscription(db: Database, uuid: string) {
	const [row] = await db.select().from(subscriptions).where(eq(subscriptions.uuid, uuid)).limit(1);
	return row;
}

// A subscription of the given account: another account's is as absent as a missing one.
export async function findOwnSubscription(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select()
		.from(subscriptions)
		.where(and(eq(subscriptions.uuid, uuid), eq(subscriptions.account, account)))
		.limit(1);
	return row;
}

// A pending or confirmed subscription past its validity is expired, whether or not a request
// has written that down yet; answers and filters go by this.
export function effectiveStatus(row: Pick<SubscriptionRow, "status" | "validity_ts">, at: number): Status {
	return (row.status === "pending" || row.status === "confirmed") && row.validity_ts <= at ? "expired" : row.status;
}

function statusIs(status: Status, at: number): SQL | undefined {
	const s = subscriptions;
	if (status === "expired")
		return or(eq(s.status, "expired"), and(inArray(s.status, ["pending", "confirmed"]), lte(s.validity_ts, at)));
	if (status === "pending" || status === "confirmed") return and(eq(s.status, status), gt(s.validity_ts, at));
	return eq(s.status, status);
}

// Where a page of the listing starts: after this row, in (created_ts, uuid) order.
export type ListPosition = { created_ts: number; uuid: string };

// One page of the account's subscriptions in (created_ts, uuid) order, from `after`: `limit`
// rows, and whether more follow. They are kept with their publishers, in any database, so each
// of `dbs` (every database) is asked for its first `limit` + 1 through the account's listing
// index, all at once, and the page is the first `limit` of them all.
export async function listSubscriptions(
	dbs: Database[],
	account: string,
	filter: { topic?: string; status?: Status },
	at: number,
	after: ListPosition | null,
	limit: number,
) {
	const s = subscriptions;
	const pages = await Promise.all(
		dbs.map((db) =>
			db
				.select()
				.from(s)
				.where(
					and(
						eq(s.account, account),
						after === null ? undefined : sql`(${s.created_ts}, ${s.uuid}) > (${after.created_ts}, ${after.uuid})`,
						filter.topic === undefined ? undefined : eq(s.topic, filter.topic),
						filter.status === undefined ? undefined : statusIs(filter.status, at),
					),
				)
				.orderBy(asc(s.created_ts), asc(s.uuid))
				.limit(limit + 1),
		),
	);
	// SQLite orders text by its bytes; uuids are lowercase ASCII, where that is JavaScript's order.
	const rows = pages
		.flat()
		.sort((a, b) => a.created_ts - b.created_ts || (a.uuid < b.uuid ? -1 : a.uuid > b.uuid ? 1 : 0));
	return { rows: rows.slice(0, limit), more: rows.length > limit };
}

export async function deleteSubscription(db: Database, uuid: string) {
	await db.delete(subscriptions).where(eq(subscriptions.uuid, uuid));
}

// The token URL names the publishing account (the subscriber's own, or the one that granted it
// the topic).
export async function findByToken(db: Database, account: string, tokenHash: string) {
	const [row] = await db
		.select()
		.from(subscriptions)
		.where(and(eq(subscriptions.publisher, account), eq(subscriptions.token_hash, tokenHash)))
		.limit(1);
	return row;
}

type Changes = Partial<
	Pick<
		SubscriptionRow,
		| "status"
		| "validity_ts"
		| "message"
		| "token_hash"
		| "sealed_token"
		| "sealed_key"
		| "sealed_previous_key"
		| "previous_key_until"
		| "delivered_ts"
		| "failure_reason"
		| "attempts"
	>
>;

// `onlyIf` guards against a change racing another: the row changes only while it still has
// that status (and message), and undefined is answered when it no longer does.
export async function patchSubscription(
	db: Database,
	uuid: string,
	changes: Changes,
	at: number,
	onlyIf?: { status?: Status; message?: string },
) {
	const [row] = await db
		.update(subscriptions)
		.set({ ...changes, updated_ts: at })
		.where(
			and(
				eq(subscriptions.uuid, uuid),
				onlyIf?.status === undefined ? undefined : eq(subscriptions.status, onlyIf.status),
				onlyIf?.message === undefined ? undefined : eq(subscriptions.message, onlyIf.message),
			),
		)
		.returning();
	return row;
}

// The dead-letter consumer's verdict: only the confirmation it was about can fail it, and only
// while still pending.
export async function markFailed(db: Database, uuid: string, message: string, reason: string, at: number) {
	await db
		.update(subscriptions)
		.set({ status: "failed" satisfies Status, failure_reason: reason, updated_ts: at })
		.where(and(eq(subscriptions.uuid, uuid), eq(subscriptions.status, "pending"), eq(subscriptions.message, message)));
}

// The subscribers of `uuids` as their rules read them now: each subscription's user, its role's
// statement and rules, its description, and the subscription's DICT. The subscriptions are read
// in `db`, their publisher's; the users and roles in each subscriber's own database, which
// `homeOf` names, one read per database and all at once. A subscription whose user is gone is
// left out.
export async function subscribersOf(
	db: Database,
	uuids: string[],
	homeOf: (account: string) => { binding: string; db: Database },
) {
	const found = new Map<string, Subscriber>();
	if (uuids.length === 0) return found;
	const held = await db
		.select({
			subscription: subscriptions.uuid,
			dict: subscriptions.dict,
			account: subscriptions.account,
			user: subscriptions.user,
		})
		.from(subscriptions)
		.where(sql`${subscriptions.uuid} IN (SELECT value FROM json_each(${JSON.stringify(uuids)}))`);
	const byHome = new Map<string, { db: Database; users: Set<string> }>();
	for (const row of held) {
		const home = homeOf(row.account);
		const group = byHome.get(home.binding) ?? { db: home.db, users: new Set<string>() };
		group.users.add(row.user);
		byHome.set(home.binding, group);
	}
	const readers = (
		await Promise.all(
			[...byHome.values()].map(({ db: home, users: ids }) =>
				home
					.select({
						account: users.account,
						user: users.uuid,
						role: users.role,
						description: users.description,
						statement: roles.statement,
						rules: roles.rules,
					})
					.from(users)
					.innerJoin(roles, eq(roles.uuid, users.role))
					.where(sql`${users.uuid} IN (SELECT value FROM json_each(${JSON.stringify([...ids])}))`),
			),
		)
	).flat();
	const byUser = new Map(readers.map((reader) => [reader.user, reader]));
	for (const { subscription, dict, account, user } of held) {
		const reader = byUser.get(user);
		// A user is its account's: one of another account is no reader of this subscription.
		if (reader && reader.account === account) found.set(subscription, { ...reader, dict });
	}
	return found;
}

export type Subscriber = Pick<typeof users.$inferSelect, "account" | "role" | "description"> & {
	user: string;
	dict: SubscriptionRow["dict"];
	statement: typeof roles.$inferSelect.statement;
	rules: typeof roles.$inferSelect.rules;
};

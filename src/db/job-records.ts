import { and, desc, eq, inArray, lt, or, sql } from "drizzle-orm";
import type { Database } from "./client";
import { accounts, jobLines, jobs, uploads } from "./schema";

// The rows of batches and exports (docs/batches.md): made by the account's object, changed by
// the job's own object as it runs, read by get and list.

export type JobRow = typeof jobs.$inferSelect;
export type JobKind = JobRow["kind"];

// The statuses a job ends in: it no longer counts as active, may be deleted, and expires.
export const TERMINAL = ["hash_mismatch", "validation_failed", "completed", "cancelled"] as const;
export const isTerminal = (status: string) => (TERMINAL as readonly string[]).includes(status);

// How many of the account's jobs have not ended, and how many it keeps, each counted no
// further than its limit (a bounded read of the account's index range).
export async function jobCounts(
	db: Database,
	account: string,
	limits: { active: number; kept: number },
): Promise<{ active: number; kept: number }> {
	const kept = db
		.select({ status: jobs.status })
		.from(jobs)
		.where(eq(jobs.account, account))
		.orderBy(desc(jobs.created_ts))
		.limit(limits.kept);
	const rows = await kept;
	return { active: rows.filter((row) => !isTerminal(row.status)).length, kept: rows.length };
}

// A new job's row; a file batch's consumes the upload it takes over (its bytes no longer count
// as the account's uploads: the job's input is the job's until it is deleted), in one batch.
export async function insertJob(db: Database, row: JobRow, consumed?: { handler: string; size: number }) {
	if (!consumed) {
		await db.insert(jobs).values(row);
		return;
	}
	await db.batch([
		db.insert(jobs).values(row),
		db.delete(uploads).where(eq(uploads.handler, consumed.handler)),
		db
			.update(accounts)
			.set({ doc_bytes: sql`max(0, ${accounts.doc_bytes} - ${consumed.size})` })
			.where(eq(accounts.uuid, row.account)),
	]);
}

// One job of the account, whoever made it: the caller decides whether it may see it.
export async function findJob(db: Database, account: string, uuid: string): Promise<JobRow | undefined> {
	const [row] = await db
		.select()
		.from(jobs)
		.where(and(eq(jobs.uuid, uuid), eq(jobs.account, account)))
		.limit(1);
	return row;
}

// A job by its uuid alone: what its object and its file URLs read.
export async function jobByUuid(db: Database, uuid: string): Promise<JobRow | undefined> {
	const [row] = await db.select().from(jobs).where(eq(jobs.uuid, uuid)).limit(1);
	return row;
}

export type JobPage = {
	account: string;
	kind: JobKind;
	// null: every user's (the administrator's list).
	user: string | null;
	statuses: string[] | null;
	// The last job of the page before, newest first: (created_ts, uuid).
	after: [number, string] | null;
	limit: number;
};

// A page of the account's jobs of one kind, newest first (created_ts, then uuid). It reads at
// most `limit` + `extra` index entries of the account: the rows of another user or status it
// passes over count against that, so a page may hold fewer than `limit` while more follow.
export function listJobs(db: Database, page: JobPage, extra: number) {
	const position = page.after
		? or(lt(jobs.created_ts, page.after[0]), and(eq(jobs.created_ts, page.after[0]), lt(jobs.uuid, page.after[1])))
		: undefined;
	return db
		.select()
		.from(jobs)
		.where(and(eq(jobs.account, page.account), position))
		.orderBy(desc(jobs.created_ts), desc(jobs.uuid))
		.limit(page.limit + extra)
		.then((rows) => ({
			examined: rows,
			kept: rows.filter(
				(row) =>
					row.kind === page.kind &&
					(page.user === null || row.user === page.user) &&
					(page.statuses === null || page.statuses.includes(row.status)),
			),
		}));
}

export type JobChanges = Partial<Pick<JobRow, "status" | "record" | "updated_ts" | "expires_ts">>;

// A step's one write of the job's row; answers whether the row is there.
export async function updateJob(db: Database, uuid: string, changes: JobChanges): Promise<boolean> {
	const written = await db.update(jobs).set(changes).where(eq(jobs.uuid, uuid)).returning({ uuid: jobs.uuid });
	return written.length > 0;
}

// The row goes at once: from then on the job is absent everywhere.
export function deleteJobRow(db: Database, uuid: string) {
	return db.delete(jobs).where(eq(jobs.uuid, uuid));
}

// Up to `limit` of a deleted job's line marks; answers whether any were left.
export async function deleteLineMarksStep(db: Database, job: string, limit: number): Promise<boolean> {
	const some = db.select({ line: jobLines.line }).from(jobLines).where(eq(jobLines.job, job)).limit(limit);
	const deleted = await db
		.delete(jobLines)
		.where(and(eq(jobLines.job, job), inArray(jobLines.line, some)))
		.returning({ line: jobLines.line });
	return deleted.length === limit;
}

// Who made a job, as the job's object reads it again before every step (docs/batches.md,
// "How lines run"): what the credential rests on, a token's own expiry, and the request's DICT.
export type JobCreator = {
	account: string;
	user: string;
	binding: import("../base/stream-token").StreamBinding;
	exp: number | null;
	dict: import("../base/caller").Description | null;
};

// What a job's object is started with: its row's fixed parts, its creator, and where its input is.
export type JobSpec = {
	uuid: string;
	kind: JobKind;
	operation: string | null;
	creator: JobCreator;
	// The input's R2 key (a file batch), and its SHA-256.
	input: string | null;
	hash: string | null;
	created_ts: number;
	// The record's parts the job reads: a match batch's `twins` and `template`, an export's
	// `contents` and `match`.
	details: Record<string, unknown>;
	// The record as created beyond the columns (hash, description, a match batch's twins and
	// template, an export's contents and match): each step writes it back with the progress.
	record: Record<string, unknown>;
	// The status it starts in: `new`, or `hash_mismatch` (ended at once; kept until it expires).
	status: "new" | "hash_mismatch";
	expires_ts: number | null;
};

// What a job's object answers a cancel or a delete: the row's parts it changed.
export type JobAnswer = {
	status: string;
	record: Record<string, unknown>;
	updated_ts: number;
	expires_ts: number | null;
};

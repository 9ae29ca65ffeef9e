import { and, eq } from "drizzle-orm";
import { type Database, database } from "./client";
import { jobLines } from "./schema";
import { homeDatabase, homeOf } from "./shards";

// A batch line as it runs (docs/batches.md, "Exactly once"): the job, the line's number and the
// trace of the run. A write that carries one adds `markLine` to the D1 batch that commits it.
// The mark lives in its job's database, which the job's uuid names (a sibling of its account's,
// so it is the account's database, where the account's own writes commit).
export type LineMark = { job: string; line: number; trace: string };

// The line's row, inserted with the write: a plain INSERT, so that a second run of the same line
// fails on the key and its whole batch, the write with it, rolls back.
export function markLine(db: Database, mark: LineMark, at: number) {
	return db.insert(jobLines).values({ job: mark.job, line: mark.line, trace: mark.trace, at });
}

// The statements to add to a write's batch: the mark's, or none for a write that is no batch line.
export function lineMarks(db: Database, mark: LineMark | undefined, at: number) {
	return mark === undefined ? [] : [markLine(db, mark, at)];
}

// The mark for a write whose batch commits in the database holding the rows of `id` (a twin's,
// another account's): only when that is the job's database, where the job looks for it.
export function markIn(env: Env, mark: LineMark | undefined, id: string): LineMark | undefined {
	return mark !== undefined && homeOf(env, mark.job) === homeOf(env, id) ? mark : undefined;
}

// The mark of a write that committed in another database than its job's, on its own right after
// it: no D1 batch spans two databases. A run cut short between the two leaves the write without
// its mark, and a later run writes again (the two writes that can, a doc's description and a
// sticker's removal, end as the first left them).
export async function markApart(env: Env, mark: LineMark, at: number) {
	await markLine(database(homeDatabase(env, mark.job)), mark, at);
}

// The line's row, if a run committed it: that run's trace.
export async function findLineMark(db: Database, job: string, line: number) {
	const [row] = await db
		.select({ trace: jobLines.trace })
		.from(jobLines)
		.where(and(eq(jobLines.job, job), eq(jobLines.line, line)))
		.limit(1);
	return row;
}

import { and, eq } from "drizzle-orm";
import type { Database } from "./client";
import { jobLines } from "./schema";
import { homeOf } from "./shards";

// A batch line as it runs (docs/batches.md, "How lines run"): the job, the line's number and the
// trace of the run. A write that carries one adds `markLine` to the D1 batch that commits it.
// The mark lives in its job's database, which the job's uuid names (a sibling of its account's,
// so it is the account's database, where the account's own writes commit).
export type LineMark = { job: string; line: number; trace: string };

// The line's row, inserted with the write: a plain INSERT, so that a second run of the same line
// fails on the key and its whole batch, the write with it, rolls back. A write that commits in
// another database than its job's (no D1 batch spans two) inserts it on its own right after: a
// run cut short between the two leaves the write without its mark, and a later run of the line
// meets the write as done (a removed sticker is absent) or does it again (a doc's description
// set twice ends as once).
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

// The line's row, if a run committed it: that run's trace.
export async function findLineMark(db: Database, job: string, line: number) {
	const [row] = await db
		.select({ trace: jobLines.trace })
		.from(jobLines)
		.where(and(eq(jobLines.job, job), eq(jobLines.line, line)))
		.limit(1);
	return row;
}

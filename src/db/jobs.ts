import type { Database } from "./client";
import { jobLines } from "./schema";

// A batch line as it runs (docs/batches.md, "Exactly once"): the job, the line's number and the
// trace of the run. A write that carries one adds `markLine` to the D1 batch that commits it.
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

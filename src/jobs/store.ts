import type { JobSpec } from "../db/job-records";
import type { LineError } from "../operations/batch-lines";

// A job's own storage (its object's SQLite): its state, one row kept whole, and the answers of
// its lines, one row each, kept until the job is deleted.

export type Progress = { lines: number | null; done: number; succeeded: number; failed: number };

export type JobState = {
	spec: JobSpec;
	status: string;
	progress: Progress;
	// The next line to read and where it starts in the input.
	next: { line: number; offset: number };
	// A line whose run began and has no answer yet: after a restart, the line's mark in D1 says
	// whether its write committed.
	running: number | null;
	// Runs of the next line that answered 5xx, retried with backoff.
	retries: number;
	errors: LineError[];
	stopped: { subcode: number; description: string } | null;
	cancelAsked: boolean;
	// A match batch's selection: the last twin examined.
	after: string;
	// A line longer than a window is being passed over (validation): its error is recorded.
	skipping: boolean;
	// The results file being written: its multipart upload, its parts, and the next line to write.
	writing: { uploadId: string | null; parts: R2UploadedPart[]; line: number } | null;
	// Parts of the record only some jobs have (an export's files).
	extra: Record<string, unknown>;
	updated_ts: number;
	expires_ts: number | null;
	// The job's row was seen in D1: the account's object committed the create.
	rowSeen: boolean;
};

// What a step works with: the environment, the job's storage, a way to save its state at once
// (after each line), and the object's state (waitUntil for a line's usage).
export type StepRuntime = { env: Env; store: JobStore; save(): void; ctx: DurableObjectState };

export type Answer = { line: number; twin: string | null; status: number; subcode: number | null; body: string };

export class JobStore {
	constructor(private readonly sql: SqlStorage) {
		sql.exec("CREATE TABLE IF NOT EXISTS job (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT NOT NULL)");
		// A match batch's lines: the n-th twin selected.
		sql.exec("CREATE TABLE IF NOT EXISTS selected (line INTEGER PRIMARY KEY, twin TEXT NOT NULL)");
		sql.exec(`CREATE TABLE IF NOT EXISTS answers (line INTEGER PRIMARY KEY, twin TEXT, status INTEGER NOT NULL,
			subcode INTEGER, body TEXT NOT NULL)`);
	}

	load(): JobState | undefined {
		const [row] = this.sql.exec<{ state: string }>("SELECT state FROM job WHERE id = 1").toArray();
		return row ? (JSON.parse(row.state) as JobState) : undefined;
	}

	save(state: JobState) {
		this.sql.exec(
			"INSERT INTO job (id, state) VALUES (1, ?) ON CONFLICT (id) DO UPDATE SET state = excluded.state",
			JSON.stringify(state),
		);
	}

	answer(answer: Answer) {
		this.sql.exec(
			"INSERT OR REPLACE INTO answers (line, twin, status, subcode, body) VALUES (?, ?, ?, ?, ?)",
			answer.line,
			answer.twin,
			answer.status,
			answer.subcode,
			answer.body,
		);
	}

	select(first: number, twins: string[]) {
		for (const [i, twin] of twins.entries())
			this.sql.exec("INSERT OR REPLACE INTO selected (line, twin) VALUES (?, ?)", first + i, twin);
	}

	// Up to `limit` selected twins from line `line`.
	selectedFrom(line: number, limit: number): { line: number; twin: string }[] {
		return this.sql
			.exec<{ line: number; twin: string }>(
				"SELECT line, twin FROM selected WHERE line >= ? ORDER BY line LIMIT ?",
				line,
				limit,
			)
			.toArray();
	}

	has(line: number): boolean {
		return this.sql.exec("SELECT 1 FROM answers WHERE line = ?", line).toArray().length > 0;
	}

	// Up to `limit` answers in line order from `line`.
	answersFrom(line: number, limit: number): Answer[] {
		return this.sql
			.exec<Answer>(
				"SELECT line, twin, status, subcode, body FROM answers WHERE line >= ? ORDER BY line LIMIT ?",
				line,
				limit,
			)
			.toArray();
	}
}

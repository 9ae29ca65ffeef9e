import type { JobSpec } from "../db/job-records";
import type { LineError } from "../operations/batch-lines";

// A job's own storage (its object's SQLite): its state, one row kept whole, and the answers of
// its lines, one row each, kept until the job is deleted.

// A batch's progress: its lines, once validated, and those run.
export type BatchProgress = { lines: number | null; done: number; succeeded: number; failed: number };
// An export's: the account's twins when it began (hidden ones too), those examined, those written.
export type ExportProgress = { twins: number | null; scanned: number; exported: number };
export type Progress = BatchProgress | ExportProgress;

// One of an export's files as it is written: gzip members appended to a multipart upload in
// parts of exactly PART_BYTES (R2 wants every part but the last the same size); the bytes not yet
// a whole part wait in the object's storage (JobStore's pending chunks).
export type ExportFile = {
	uploadId: string | null;
	parts: R2UploadedPart[];
	lines: number;
	// The file's size so far: its parts and its pending bytes.
	bytes: number;
	pending: number;
	// Its last part is in and the upload complete (or the file put whole).
	written: boolean;
};

// An export's walk: after its twins (`after` in JobState), the Indexes tables by name, each read
// in twin order after `after`; and its files.
export type ExportWalk = {
	table: { name: string; after: string; finished: boolean } | null;
	files: Record<string, ExportFile>;
};

export type JobState<P extends Progress = Progress> = {
	spec: JobSpec;
	status: string;
	progress: P;
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
	// A match batch's selection, or an export's walk: the last twin examined.
	after: string;
	// A line longer than a window is being passed over (validation): its error is recorded.
	skipping: boolean;
	// The results file being written: its multipart upload, its parts, and the next line to write.
	writing: { uploadId: string | null; parts: R2UploadedPart[]; line: number } | null;
	// An export's walk and files (absent for a batch).
	exporting?: ExportWalk;
	// Parts of the record only some jobs have (an export's files).
	extra: Record<string, unknown>;
	updated_ts: number;
	expires_ts: number | null;
	// The job's row was seen in D1: the account's object committed the create.
	rowSeen: boolean;
};

// What a step works with: the environment, the job's storage, a way to save its state at once
// (after each line), and the object's state (waitUntil for a line's usage).
export type StepRuntime = {
	env: Env;
	store: JobStore;
	save(): void;
	ctx: DurableObjectState;
	// The window of the input the last processing step read, kept by the object between steps.
	window: InputWindow | undefined;
};

// Bytes of a batch's input from `offset`; `last` when they reach the file's end.
export type InputWindow = { offset: number; bytes: Uint8Array; last: boolean };

export type BatchState = JobState<BatchProgress>;
export type ExportState = JobState<ExportProgress>;

export type Answer = { line: number; twin: string | null; status: number; subcode: number | null; body: string };

export class JobStore {
	constructor(private readonly sql: SqlStorage) {
		sql.exec("CREATE TABLE IF NOT EXISTS job (id INTEGER PRIMARY KEY CHECK (id = 1), state TEXT NOT NULL)");
		// A match batch's lines: the n-th twin selected.
		sql.exec("CREATE TABLE IF NOT EXISTS selected (line INTEGER PRIMARY KEY, twin TEXT NOT NULL)");
		sql.exec(`CREATE TABLE IF NOT EXISTS answers (line INTEGER PRIMARY KEY, twin TEXT, status INTEGER NOT NULL,
			subcode INTEGER, body TEXT NOT NULL)`);
		// An export file's bytes not yet a whole part, in chunks under the storage's 2 MB a value.
		sql.exec(`CREATE TABLE IF NOT EXISTS pending (file TEXT NOT NULL, seq INTEGER NOT NULL, bytes BLOB NOT NULL,
			PRIMARY KEY (file, seq))`);
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

	// The pending bytes of an export's file, in order.
	pending(file: string): Uint8Array {
		const chunks = this.sql
			.exec<{ bytes: ArrayBuffer }>("SELECT bytes FROM pending WHERE file = ? ORDER BY seq", file)
			.toArray()
			.map((row) => new Uint8Array(row.bytes));
		return concatBytes(chunks);
	}

	// Adds bytes after the file's pending ones.
	appendPending(file: string, bytes: Uint8Array) {
		const [last] = this.sql
			.exec<{ seq: number | null }>("SELECT max(seq) AS seq FROM pending WHERE file = ?", file)
			.toArray();
		let seq = (last?.seq ?? 0) + 1;
		for (let at = 0; at < bytes.length; at += PENDING_CHUNK_BYTES) {
			const chunk = bytes.slice(at, at + PENDING_CHUNK_BYTES);
			this.sql.exec("INSERT INTO pending (file, seq, bytes) VALUES (?, ?, ?)", file, seq++, chunk.buffer);
		}
	}

	// The file's pending bytes become `bytes`.
	replacePending(file: string, bytes: Uint8Array) {
		this.sql.exec("DELETE FROM pending WHERE file = ?", file);
		this.appendPending(file, bytes);
	}

	dropPending() {
		this.sql.exec("DELETE FROM pending");
	}
}

// A pending chunk's size: well under the 2 MB a SQLite value of the object may hold.
const PENDING_CHUNK_BYTES = 1024 * 1024;

export function concatBytes(chunks: Uint8Array[]): Uint8Array {
	const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0));
	let at = 0;
	for (const chunk of chunks) {
		out.set(chunk, at);
		at += chunk.length;
	}
	return out;
}

import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { database } from "../db/client";
import { deleteJobRow, isTerminal, type JobAnswer, type JobSpec, updateJob } from "../db/job-records";
import { homeDatabase } from "../db/shards";
import { Timers } from "../account/timers";
import { type InputWindow, type JobState, JobStore } from "./store";
import { batchStep } from "./batch-steps";
import { cleanupStep } from "./cleanup";
import { D1Meter } from "../db/meter";
import { type Outcome, settled } from "../account/outcome";

// One object per batch or export (docs/batches.md), named by the job's uuid: its stage, offsets
// and the answers of its lines in its own SQLite, stepped by its one timer. Every step ends
// with one write of the job's row in D1, which get and list read. The object is started by the
// account's object before the job's row is written; a row that never comes means the create
// failed, and the object forgets itself.

// The one timer: the job's next step, whatever its stage.
const STEP = "step";
// How long a started object waits for its row before it takes the create for failed.
const ROW_GRACE_SECONDS = 60;
// A step that failed (D1 or R2 did) is tried again this much later.
const RETRY_SECONDS = 5;

export class JobObject {
	private readonly store: JobStore;
	private readonly timers: Timers;
	private state: JobState | undefined;
	// What the current call or step spends in D1.
	private meter = new D1Meter();
	// The input's window the last step read: the next step runs on from it while it holds a
	// step's lines, rather than read the same megabyte again. Lost with the object, read again.
	private window: InputWindow | undefined;
	// The step just run removed the last of a deleted job: its storage goes when the alarm ends.
	private forgotten = false;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected readonly env: Env,
	) {
		this.store = new JobStore(ctx.storage.sql);
		this.timers = new Timers(ctx.storage, { [STEP]: () => this.step() });
	}

	private current(): JobState | undefined {
		this.state ??= this.store.load();
		return this.state;
	}

	private save(state: JobState) {
		state.updated_ts = now();
		this.state = state;
		this.store.save(state);
	}

	// The job begins: its spec kept, its first step due at once. A second start changes nothing.
	async start(spec: JobSpec): Promise<void> {
		if (this.current()) return;
		const state: JobState = {
			spec,
			status: spec.status,
			progress:
				spec.kind === "export"
					? { twins: null, scanned: 0, exported: 0 }
					: { lines: null, done: 0, succeeded: 0, failed: 0 },
			next: { line: 1, offset: 0 },
			running: null,
			retries: 0,
			skipping: false,
			after: "",
			errors: [],
			stopped: null,
			cancelAsked: false,
			writing: null,
			extra: {},
			updated_ts: spec.created_ts,
			expires_ts: spec.expires_ts,
			rowSeen: false,
		};
		this.save(state);
		await this.timers.by(STEP, spec.uuid, now());
	}

	// Cancel (update_batch, update_export): a job not ended stops between two lines; one already
	// asked to stays as it is; an ended one is 409232.
	cancel(): Promise<Outcome<JobAnswer>> {
		return this.call(() => this.cancelNow());
	}

	private async cancelNow(): Promise<JobAnswer> {
		const state = this.current();
		if (!state || state.status === "deleting") throw new ApiError("not_found");
		if (isTerminal(state.status)) throw jobState("An ended job cannot be cancelled");
		if (!state.cancelAsked) {
			state.cancelAsked = true;
			if (state.status !== "cancelling") state.status = "cancel";
			this.save(state);
			await this.sync(state);
			await this.timers.by(STEP, state.spec.uuid, now());
		}
		return this.answerOf(state);
	}

	// Delete (delete_batch, delete_export): an ended job is gone at once for every route; its
	// files, input and line marks go in the steps after.
	remove(): Promise<Outcome<JobAnswer>> {
		return this.call(() => this.removeNow());
	}

	private async removeNow(): Promise<JobAnswer> {
		const state = this.current();
		if (!state || state.status === "deleting") throw new ApiError("not_found");
		if (!isTerminal(state.status)) throw jobState("Only an ended job can be deleted: cancel it first");
		await this.forget(state);
		return { ...this.answerOf(state), status: "deleting" };
	}

	// A call from a request: what it cost in D1 goes back with its answer, for Server-Timing.
	private call<T>(work: () => Promise<T>): Promise<Outcome<T>> {
		this.meter = new D1Meter();
		return settled(this.meter, "job", work);
	}

	async alarm() {
		this.meter = new D1Meter();
		this.forgotten = false;
		await this.timers.run();
		// Only once the timers are done: they read their own table in this storage after the step
		// (to set the next alarm), and would fail on it gone, the alarm failing with them.
		if (this.forgotten) await this.ctx.storage.deleteAll();
	}

	// The job's record as its row holds it: what it was made with, its progress, errors, stop.
	private recordOf(state: JobState): Record<string, unknown> {
		const { spec, progress, errors, stopped, extra } = state;
		return {
			...spec.record,
			progress,
			...(errors.length ? { errors } : {}),
			...(stopped ? { stopped } : {}),
			...extra,
		};
	}

	private answerOf(state: JobState): JobAnswer {
		return {
			status: state.status,
			record: this.recordOf(state),
			updated_ts: state.updated_ts,
			expires_ts: state.expires_ts,
		};
	}

	// The step's one write of the job's row. Answers whether the row is there.
	private async sync(state: JobState): Promise<boolean> {
		const db = database(this.meter.wrap(homeDatabase(this.env, state.spec.creator.account)));
		return updateJob(db, state.spec.uuid, {
			status: state.status,
			record: this.recordOf(state),
			updated_ts: state.updated_ts,
			expires_ts: state.expires_ts,
		});
	}

	// Deleted, or expired: the row goes now; the rest in the steps after.
	private async forget(state: JobState) {
		const db = database(this.meter.wrap(homeDatabase(this.env, state.spec.creator.account)));
		await deleteJobRow(db, state.spec.uuid);
		state.status = "deleting";
		this.save(state);
		await this.timers.by(STEP, state.spec.uuid, now());
	}

	// One step of the job, whatever its stage; answers when the next is due.
	private async step(): Promise<number | undefined> {
		const state = this.current();
		if (!state) return undefined;
		try {
			if (state.status === "deleting") {
				const more = await cleanupStep(this.env, state.spec, state.rowSeen);
				if (more) return now();
				// Nothing of the job is left but its own storage, which the alarm deletes last.
				this.forgotten = true;
				this.state = undefined;
				return undefined;
			}
			if (isTerminal(state.status)) {
				if (state.expires_ts !== null && state.expires_ts <= now()) {
					await this.forget(state);
					return now();
				}
				if (!state.rowSeen && !(await this.confirmRow(state))) return this.orphaned(state);
				return state.expires_ts ?? undefined;
			}
			if (!state.rowSeen && !(await this.confirmRow(state))) return this.orphaned(state);
			const runtime = {
				env: this.env,
				store: this.store,
				save: () => this.save(state),
				ctx: this.ctx,
				window: this.window,
			};
			const next = await batchStep(runtime, state);
			this.window = runtime.window;
			this.save(state);
			if (!(await this.sync(state))) {
				// The row is gone (deleted while the step ran): the job is over.
				state.status = "deleting";
				this.save(state);
				return now();
			}
			return next ?? state.expires_ts ?? undefined;
		} catch (error) {
			// The next try starts from the state last saved, not from what this one changed since.
			this.state = undefined;
			// A refusal the job's own input earns (a match rule that needs more work on one twin
			// than a request may spend) would be earned again at every try: the job stops with it,
			// as with a creator who may no longer run it, and writes what it has.
			const saved = this.current();
			if (error instanceof ApiError && saved && !isTerminal(saved.status) && saved.status !== "deleting") {
				saved.stopped = { subcode: error.subcode, description: error.message };
				saved.status = "cancelling";
				this.save(saved);
				return now();
			}
			console.error(JSON.stringify({ job: state.spec.uuid, status: state.status, error: String(error) }));
			return now() + RETRY_SECONDS;
		}
	}

	private async confirmRow(state: JobState): Promise<boolean> {
		if (!(await this.sync(state))) return false;
		state.rowSeen = true;
		this.save(state);
		return true;
	}

	// No row: the create has not committed yet, or never will.
	private async orphaned(state: JobState): Promise<number | undefined> {
		if (now() < state.spec.created_ts + ROW_GRACE_SECONDS) return now() + 1;
		state.status = "deleting";
		this.save(state);
		return now();
	}
}

const jobState = (description: string) => new ApiError("job_state", { description });

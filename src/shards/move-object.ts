import { now } from "../base/time";
import {
	bucketPage,
	copyStatements,
	deleteBucketRows,
	deleteMove,
	MOVED_TABLES,
	type MoveRow,
	prefixOf,
	putMove,
} from "../db/moves";
import { declaredShards, shardDatabase } from "../db/shards";

// One object per moving bucket (named `bucket-N`): it moves the bucket's rows from one database
// to another in steps of its alarm (docs/scaling.md, "Moving a bucket"). The steps:
//   grace      the move's row is on every shard, so writes to the bucket answer 503241; the
//              object waits MOVE_GRACE_SECONDS for writes that began before to finish
//   copying    table by table, pages of rows copied to the target, reads still served from the
//              source
//   copied     waiting for the flip: SHARDS changed to map the bucket to the target, seen by
//              status() in a Worker that runs the new map
//   finishing  the move's rows deleted but the source's (writes resume, on the target), then the
//              source's rows of the bucket, then its move row
//   done
// Before the flip, abort() undoes it: `aborting` deletes the copy, then the move's rows.
export type MoveState = "grace" | "copying" | "copied" | "finishing" | "aborting" | "done" | "aborted";

export type MoveView = {
	bucket: number;
	source: string;
	target: string;
	state: MoveState;
	started_ts: number;
	copied_rows: number;
	deleted_rows: number;
};

type Stored = MoveView & { table: number; after: number; inflight: boolean };

const STATE = "move";
// Rows a page copies or deletes, and pages per alarm: a step stays well inside an alarm's time.
const PAGE_ROWS = 50;
const PAGES_PER_STEP = 20;

export type Started = { ok: true; move: MoveView } | { ok: false; running: MoveView };

export class MoveObject {
	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {}

	private async stored(): Promise<Stored | undefined> {
		return this.ctx.storage.get<Stored>(STATE);
	}

	private async save(state: Stored) {
		await this.ctx.storage.put(STATE, state);
	}

	// Begins a move, unless this bucket's last one is still running.
	async start(bucket: number, source: string, target: string): Promise<Started> {
		const current = await this.stored();
		if (current && current.state !== "done" && current.state !== "aborted")
			return { ok: false, running: view(current) };
		const state: Stored = {
			bucket,
			source,
			target,
			state: "grace",
			started_ts: now(),
			copied_rows: 0,
			deleted_rows: 0,
			table: 0,
			after: 0,
			inflight: false,
		};
		// Kept before the rows go out: an object that stops in between still knows its move, and
		// an abort deletes whatever rows were written.
		await this.save(state);
		await this.onEveryShard((db) => putMove(db, rowOf(state, "copying")));
		await this.ctx.storage.setAlarm(Date.now() + Number(this.env.MOVE_GRACE_SECONDS ?? 10) * 1000);
		return { ok: true, move: view(state) };
	}

	// The move as it stands. `serving`: the binding the asking Worker's SHARDS maps the bucket
	// to; once it is the target and the copy is done, the move finishes: writes resume there.
	async status(serving: string): Promise<MoveView | undefined> {
		const state = await this.stored();
		if (!state) return undefined;
		if (state.state === "copied" && serving === state.target) {
			state.state = "finishing";
			state.table = 0;
			// Writes resume on the target. The source keeps the move's row until its copy of the
			// bucket is gone: a Worker still on the old map is refused there, never writes rows
			// that are about to be deleted.
			await this.onEveryShard((db, binding) => (binding === state.source ? undefined : deleteMove(db, state.bucket)));
			await this.save(state);
			await this.ctx.storage.setAlarm(Date.now());
		}
		return view(state);
	}

	// Undoes a move not yet flipped: writes resume on the source once the copy is deleted.
	// Answers the move, or `flipped` when the asking Worker already serves the bucket from the
	// target (then the move can only finish).
	async abort(serving: string): Promise<{ ok: true; move: MoveView } | { ok: false; move?: MoveView }> {
		const state = await this.stored();
		if (!state || state.state === "done" || state.state === "aborted") return { ok: false };
		if (serving === state.target || state.state === "finishing") return { ok: false, move: view(state) };
		if (state.state !== "aborting") {
			state.state = "aborting";
			state.table = 0;
			await this.onEveryShard((db) => putMove(db, rowOf(state, "aborting")));
			await this.save(state);
		}
		await this.ctx.storage.setAlarm(Date.now());
		return { ok: true, move: view(state) };
	}

	async alarm() {
		const state = await this.stored();
		if (!state) return;
		if (state.state === "grace") state.state = "copying";
		let more = false;
		if (state.state === "copying") more = await this.copy(state);
		else if (state.state === "finishing") more = await this.clear(state, state.source, "done");
		else if (state.state === "aborting") more = await this.clear(state, state.target, "aborted");
		await this.save(state);
		if (more) await this.ctx.storage.setAlarm(Date.now());
	}

	// Up to PAGES_PER_STEP pages, table by table; answers whether work is left.
	private async copy(state: Stored): Promise<boolean> {
		const source = shardDatabase(this.env, state.source);
		const target = shardDatabase(this.env, state.target);
		// A page whose batch may have committed before the object stopped: copies replace
		// themselves, but rows whose counter the target assigns would be there twice, so such a
		// table starts again from an empty copy.
		const resumed = MOVED_TABLES[state.table];
		if (state.inflight && resumed?.counter) {
			while ((await deleteBucketRows(target, resumed, state.bucket, PAGE_ROWS * 10)) > 0);
			state.after = 0;
		}
		for (let pages = 0; pages < PAGES_PER_STEP; pages++) {
			const table = MOVED_TABLES[state.table];
			if (!table) {
				state.state = "copied";
				await this.onEveryShard((db) => putMove(db, rowOf(state, "copied")));
				return false;
			}
			const rows = await bucketPage(source, table, state.bucket, state.after, PAGE_ROWS);
			if (rows.length === 0) {
				state.table += 1;
				state.after = 0;
				continue;
			}
			state.inflight = true;
			await this.save(state);
			await target.batch(copyStatements(target, table, rows));
			state.after = rows.at(-1)!._rowid;
			state.copied_rows += rows.length;
			state.inflight = false;
			await this.save(state);
		}
		return true;
	}

	// Deletes the bucket's rows from one database, a page at a time, table by table from where
	// the last step stopped (rows whose keys point to others first); at the end the move is
	// `end`, and after an abort its rows go from every shard (writes resume on the source).
	private async clear(state: Stored, binding: string, end: "done" | "aborted"): Promise<boolean> {
		const db = shardDatabase(this.env, binding);
		const tables = [...MOVED_TABLES].reverse();
		for (let pages = 0; pages < PAGES_PER_STEP; pages++) {
			const table = tables[state.table];
			if (!table) {
				if (end === "aborted") await this.onEveryShard((shard) => deleteMove(shard, state.bucket));
				else await deleteMove(db, state.bucket);
				state.state = end;
				return false;
			}
			const deleted = await deleteBucketRows(db, table, state.bucket, PAGE_ROWS * 10);
			state.deleted_rows += deleted;
			if (deleted === 0) state.table += 1;
		}
		return true;
	}

	private async onEveryShard(write: (db: D1Database, binding: string) => Promise<unknown> | undefined) {
		await Promise.all(declaredShards(this.env).map((binding) => write(shardDatabase(this.env, binding), binding)));
	}
}

function view(state: Stored): MoveView {
	const { bucket, source, target, state: phase, started_ts, copied_rows, deleted_rows } = state;
	return { bucket, source, target, state: phase, started_ts, copied_rows, deleted_rows };
}

function rowOf(state: Stored, phase: MoveRow["state"]): MoveRow {
	return {
		bucket: state.bucket,
		prefix: prefixOf(state.bucket),
		source: state.source,
		target: state.target,
		state: phase,
		started_ts: state.started_ts,
	};
}

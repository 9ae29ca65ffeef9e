import { type Database, database } from "../db/client";
import * as rows from "../db/docs";
import type { AttachRace, DocMove, QueuedMove } from "../db/docs";
import type { LineMark } from "../db/jobs";
import type { D1Meter } from "../db/meter";
import { homeDatabase, homeOf, refuseIfMoving } from "../db/shards";
import { now } from "../base/time";
import { type Host, TIMER } from "./host";

// Doc writes whose rows have two homes (docs/files.md "Docs on another database"). A twin's
// docs live in its owner's database; the uploads, doc_garbage and doc_bytes of the account
// that attaches them in its own. On another account's twin there, a write is a move
// (db/docs.ts DocMove): it commits in the account's database with an outbox row, the account's
// object makes the change in the twin's database and finishes the move in its own before the
// write answers; the alarm finishes, or undoes, a move a stop cut short.

// Where a doc write of the account on a twin reads and writes: the account's own database
// (uploads, doc_garbage, doc_bytes, its moves) and the twin's (the twin's docs), both under the
// write's meter; `apart` when they are two.
export type DocStores = { home: Database; twin: Database; apart: boolean };

export async function docStores(
	env: Env,
	home: Database,
	meter: D1Meter,
	account: string,
	twin: string,
): Promise<DocStores> {
	const binding = homeOf(env, twin);
	if (binding === homeOf(env, account)) return { home, twin: home, apart: false };
	// The twin's rows wait while its owner's bucket moves between databases, as the owner's own
	// writes do (docs/scaling.md, "Moving a bucket").
	const twinDb = meter.wrap(homeDatabase(env, twin), binding);
	await refuseIfMoving(twinDb, twin);
	return { home, twin: database(twinDb), apart: true };
}

// How long a move may wait for the alarm: the write that made it finishes it well before,
// unless the object stops in between or the twin's database fails it.
export const MOVE_GRACE_SECONDS = 30;

// The account's moves as this instance of its object knows them. A doc write waits for the
// moves committed before it (they finish in commit order): an instance that has not looked yet
// (after a restart, which may have cut one short) finishes them first; once it found none, each
// of its own writes finishes its move before answering, so it looks again only after a write
// or a step failed to. The finishing of moves left over is the object's own work, outside the
// request's meter.
export class DocMoves {
	private none = false;

	constructor(private readonly host: Host) {}

	// Every move of the account committed so far, finished in commit order; throws, leaving the
	// rest for the alarm, when one cannot be (its twin's database failed). A write makes a move
	// only once this found none, so one at most is ever left.
	async settle(account: string): Promise<void> {
		if (this.none) return;
		const home = database(this.host.home());
		const twinDb = (twin: string) => database(homeDatabase(this.host.env, twin));
		for (;;) {
			const queued = await rows.queuedMoves(home, account, MOVES_ROUND);
			for (const move of queued) await finishMove(home, twinDb(move.twin), move, now());
			if (queued.length < MOVES_ROUND) break;
		}
		this.none = true;
	}

	// Before a move's first commit: the alarm that finishes it should the write not.
	async open(account: string): Promise<void> {
		this.none = false;
		await this.host.timers.by(TIMER.docs, account, now() + MOVE_GRACE_SECONDS);
	}

	// The move a write made is finished (those before it were, before it was made).
	finished(): void {
		this.none = true;
	}
}

const MOVES_ROUND = 10;

// A move's second commit, in the twin's database, then its last, in the account's, which ends
// it. Each may run again after a stop between them: the docs are filed once, deleting them
// again deletes nothing, and the last commit runs only while the move's row is there. An attach
// the twin's database refuses (its name taken, or the account's room on the twin filled since
// the write's checks) gives its uploads back instead, and answers why.
async function finishMove(
	home: Database,
	twin: Database,
	move: QueuedMove,
	at: number,
): Promise<AttachRace | undefined> {
	if (move.kind === "attach") {
		const race = await rows.fileDocsOnce(twin, move.docs, move.perTwin);
		if (race) await rows.restoreUploads(home, move.id, move.uploads);
		else await rows.closeMove(home, move.id);
		return race;
	}
	await rows.deleteDocsOnce(
		twin,
		move.account,
		move.twin,
		move.docs.map((doc) => doc.uuid),
	);
	await rows.settleRemoval(home, move.id, move.account, move.docs, at);
	return undefined;
}

// A write's move: committed, then finished before the write answers. A batch line's mark
// commits with the move's first commit, which makes the write happen.
export async function made(
	stores: DocStores,
	moves: DocMoves,
	account: string,
	twin: string,
	move: DocMove,
	at: number,
	mark?: LineMark,
): Promise<AttachRace | undefined> {
	await moves.open(account);
	const id =
		move.kind === "attach"
			? await rows.queueAttach(stores.home, account, twin, move, at, mark)
			: await rows.queueRemoval(stores.home, account, twin, move, at, mark);
	const race = await finishMove(stores.home, stores.twin, { ...move, id, account, twin }, at);
	moves.finished();
	return race;
}

// The moves of the object `host` lends its features to: one per instance of the object, which
// its doc writes and its docs timer share.
const instances = new WeakMap<Host, DocMoves>();

export function movesOf(host: Host): DocMoves {
	let moves = instances.get(host);
	if (!moves) {
		moves = new DocMoves(host);
		instances.set(host, moves);
	}
	return moves;
}

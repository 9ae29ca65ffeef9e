import { DurableObject } from "cloudflare:workers";
import { type Database, database } from "../db/client";
import { D1Meter } from "../db/meter";
import { ApiError } from "../http/errors";
import type { Actor } from "../operations/guards";
import type { Viewer } from "../rules/visibility";
import { now } from "../time";
import { bindingOf, CURSOR_IDLE_SECONDS, CursorStore } from "./cursors";
import { type LedgerWrite, writeLedger } from "./ledger-writes";
import type { Outcome } from "./outcome";
import { readPage, type ScanRequest } from "./scan";
import * as writes from "./writes";

const JOURNAL_LENGTH = 1000;

// One object per account, addressed by the account uuid. Role writes, role assignments and
// ledger writes run here one at a time; role writes leave a line in the object's journal. Scan cursors are
// issued and kept here too, with an alarm that sweeps the expired ones.
export class AccountDO extends DurableObject<Env> {
	private tail: Promise<unknown> = Promise.resolve();
	private readonly cursors: CursorStore;

	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, env);
		this.cursors = new CursorStore(ctx.storage.sql);
		ctx.storage.sql.exec(`CREATE TABLE IF NOT EXISTS role_writes (
			seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, actor TEXT NOT NULL,
			action TEXT NOT NULL, target TEXT NOT NULL)`);
	}

	createRole(caller: writes.Principal, input: writes.RoleInput) {
		return this.write(caller, "create_user_role", (db, actor) => writes.createRole(db, actor, input));
	}

	updateRole(caller: writes.Principal, role: string, changes: Partial<writes.RoleInput>) {
		return this.write(caller, "update_user_role", (db, actor) => writes.updateRole(db, actor, role, changes));
	}

	deleteRole(caller: writes.Principal, role: string) {
		return this.write(caller, "delete_user_role", (db, actor) => writes.deleteRole(db, actor, role));
	}

	createUser(caller: writes.Principal, input: writes.UserInput) {
		return this.write(caller, "create_user", (db, actor) => writes.createUser(db, actor, input));
	}

	updateUser(caller: writes.Principal, user: string, changes: Partial<writes.UserInput>) {
		return this.write(caller, "update_user", (db, actor) => writes.updateUser(db, actor, user, changes));
	}

	// One call per scan page: resolve the cursor, read the page from D1, issue the next cursor.
	async scan(viewer: Viewer, cursor: string | undefined, request: ScanRequest) {
		const meter = new D1Meter();
		const at = now();
		const owner = { user: viewer.user, binding: bindingOf(request.match, request.details) };
		const after = cursor === undefined ? "" : this.cursors.resolve(cursor, owner, at);
		if (after === undefined) {
			const description = "The cursor is unknown, expired, or belongs to another user or scan";
			return { ok: false, code: "invalid_cursor", description, cost: meter.snapshot() } satisfies Outcome<never>;
		}
		const page = await readPage(database(meter.wrap(this.env.DB)), viewer, after, request, at);
		const next = page.examined < request.count || !page.last ? null : this.cursors.issue(owner, page.last, at);
		if (next && (await this.ctx.storage.getAlarm()) === null) await this.scheduleSweep(at + CURSOR_IDLE_SECONDS);
		const value = { cursor: next, twins: page.twins };
		return { ok: true, value, cost: meter.snapshot() } satisfies Outcome<typeof value>;
	}

	async alarm() {
		const next = this.cursors.sweep(now());
		if (next !== undefined) await this.scheduleSweep(next);
	}

	private scheduleSweep(atSeconds: number) {
		return this.ctx.storage.setAlarm(Math.ceil(atSeconds * 1000) + 1000);
	}

	journal(limit = 100) {
		return this.ctx.storage.sql
			.exec<{ seq: number; at: number; actor: string; action: string; target: string }>(
				"SELECT seq, at, actor, action, target FROM role_writes ORDER BY seq DESC LIMIT ?",
				limit,
			)
			.toArray();
	}

	// One ledger write of this account: conditions, checks and the batch, with no other write
	// of the account in between.
	writeLedger(write: LedgerWrite) {
		return this.serialized((db) => writeLedger(db, write, now()));
	}

	private write<T extends { uuid: string }>(
		caller: writes.Principal,
		action: string,
		work: (db: Database, actor: Actor) => Promise<T>,
	): Promise<Outcome<T>> {
		return this.serialized(async (db) => {
			const value = await work(db, await writes.actorFor(db, caller));
			this.record(caller.user, action, value.uuid);
			return value;
		});
	}

	// A D1 round trip does not hold the object's input gate, so mutual exclusion is explicit:
	// each write starts when the previous one has finished, whatever its outcome.
	private serialized<T>(work: (db: Database) => Promise<T>): Promise<Outcome<T>> {
		const run = this.tail.then(async (): Promise<Outcome<T>> => {
			const meter = new D1Meter();
			try {
				const value = await work(database(meter.wrap(this.env.DB)));
				return { ok: true, value, cost: meter.snapshot() };
			} catch (error) {
				if (error instanceof ApiError) {
					const { code, message: description, details } = error;
					return { ok: false, code, description, details, cost: meter.snapshot() };
				}
				throw error;
			}
		});
		this.tail = run.catch(() => undefined);
		return run;
	}

	private record(actor: string, action: string, target: string) {
		const sql = this.ctx.storage.sql;
		sql.exec("INSERT INTO role_writes (at, actor, action, target) VALUES (?, ?, ?, ?)", now(), actor, action, target);
		sql.exec("DELETE FROM role_writes WHERE seq <= (SELECT max(seq) FROM role_writes) - ?", JOURNAL_LENGTH);
	}
}

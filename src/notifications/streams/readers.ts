import type { Caller, Description, Principal } from "../../base/caller";
import { FILTER_TURN_UNITS, filterEvent, readerKey, rowScoped, type Sight } from "../../rules/reader-filter";
import type { Message, StreamLog } from "./log";

// Who each stream reads as, and what a confined reader is sent of a message (docs/streams.md,
// "Confined readers"). A reader whose role has a twin or entry rule gets each message only as
// it could read it: filtered by rules/reader-filter.ts, once per group of readers whose rules
// and the values they read are equal, within a turn's work.

// A stream's reader: its user and role as they are now, and the dictionary of the request that
// opened it.
export type ReaderOf = Principal & { dict: Description | null };

type Reader = { caller: Caller; key: string; scoped: boolean };

// The readers of an object's streams, one row per stream in the object's SQLite storage (a
// principal may be far larger than a socket's attachment), changed in place when its user or
// role changes, so that the next message is filtered as the reader now is.
export class Readers {
	private readonly cache = new Map<string, Reader>();

	constructor(private readonly sql: SqlStorage) {
		sql.exec(
			"CREATE TABLE IF NOT EXISTS readers (id TEXT PRIMARY KEY, user TEXT NOT NULL, role TEXT NOT NULL, principal TEXT NOT NULL)",
		);
		sql.exec("CREATE INDEX IF NOT EXISTS readers_user ON readers (user)");
		sql.exec("CREATE INDEX IF NOT EXISTS readers_role ON readers (role)");
	}

	add(id: string, reader: ReaderOf) {
		this.sql.exec(
			"INSERT OR REPLACE INTO readers (id, user, role, principal) VALUES (?, ?, ?, ?)",
			id,
			reader.user,
			reader.role,
			JSON.stringify(reader),
		);
		this.cache.delete(id);
	}

	remove(id: string) {
		this.sql.exec("DELETE FROM readers WHERE id = ?", id);
		this.cache.delete(id);
	}

	get(id: string): Reader | undefined {
		const hit = this.cache.get(id);
		if (hit) return hit;
		const row = this.sql.exec<{ principal: string }>("SELECT principal FROM readers WHERE id = ?", id).toArray()[0];
		if (!row) return undefined;
		const caller = JSON.parse(row.principal) as Caller;
		const reader = { caller, key: readerKey(caller), scoped: rowScoped(caller) };
		this.cache.set(id, reader);
		return reader;
	}

	// The streams of `user`, or of the holders of `role`, read as `changes` make them from now on.
	change(by: { user: string } | { role: string }, changes: Partial<ReaderOf>) {
		const [column, value] = "user" in by ? ["user", by.user] : ["role", by.role];
		const rows = this.sql
			.exec<{ id: string; principal: string }>(`SELECT id, principal FROM readers WHERE ${column} = ?`, value)
			.toArray();
		for (const row of rows) this.add(row.id, { ...(JSON.parse(row.principal) as ReaderOf), ...changes });
	}
}

// One turn's filtering: what each group was shown of each message, so that a group's streams
// share one evaluation, and the work spent.
export class Turn {
	private units = 0;
	private readonly shown = new Map<string, string | null>();
	private readonly sights = new Map<number, Sight | undefined>();
	// Whether a reader's message waits for the next turn.
	deferred = false;

	constructor(
		private readonly log: StreamLog,
		private readonly now: number,
	) {}

	// The data `reader` is sent of `m`: as stored for a reader its role does not confine; else
	// filtered, null when nothing of it is left (or the write recorded nothing to decide on).
	// Undefined once the turn's work is spent: the message waits.
	dataFor(reader: Reader, m: Message): string | null | undefined {
		if (!reader.scoped) return m.data;
		const key = `${reader.key}\n${m.id}`;
		if (this.shown.has(key)) return this.shown.get(key) as string | null;
		// Past the turn's work, a confined reader's messages wait in the log for the next turn.
		if (this.units >= FILTER_TURN_UNITS) {
			this.deferred = true;
			return undefined;
		}
		const sight = m.sight === null ? undefined : this.sightOf(m.sight);
		let data: string | null = null;
		if (sight) {
			const message = JSON.parse(m.data) as { event: Record<string, never> };
			const filtered = filterEvent(reader.caller, sight, m.event, message.event, this.now);
			this.units += filtered.units;
			// The event replaced where it stands: every other key and their order stay.
			if (filtered.event) data = JSON.stringify({ ...message, event: filtered.event });
		}
		this.shown.set(key, data);
		return data;
	}

	private sightOf(id: number): Sight | undefined {
		if (!this.sights.has(id)) {
			const text = this.log.sightOf(id);
			this.sights.set(id, text === undefined ? undefined : (JSON.parse(text) as Sight));
		}
		return this.sights.get(id);
	}
}

import { randomBase64Url } from "../base/crypto";

// Scan cursors live in the account's object: an opaque id standing for a position in the
// account's twins (the last uuid a page examined), bound to the user and to the scan's
// `match` and `details`. Asking again for the same position gives the same id, so retrying a
// page hands out the same next cursor.

export const CURSOR_IDLE_SECONDS = 24 * 60 * 60;
// Live cursors per user; one more evicts the least recently used (issued or resolved). A use
// pushes expires_at forward by the same idle period, so it orders cursors by last use.
export const MAX_CURSORS_PER_USER = 1000;
// A use within this many seconds of the last one is not written again: a retried page changes
// nothing in storage, so its answer does not wait for a write to commit. Recency is kept to
// the second.
const TOUCH_SECONDS = 1;

export type CursorBinding = { user: string; binding: string };
type Cursor = { id: string; after: string; expires_at: number };

export function bindingOf(match: string | undefined, details: boolean) {
	return JSON.stringify([match ?? null, details]);
}

export class CursorStore {
	constructor(
		private readonly sql: SqlStorage,
		private readonly perUser = MAX_CURSORS_PER_USER,
	) {
		sql.exec(`CREATE TABLE IF NOT EXISTS cursors (
			id TEXT PRIMARY KEY, user TEXT NOT NULL, binding TEXT NOT NULL, after TEXT NOT NULL,
			expires_at REAL NOT NULL, UNIQUE (user, binding, after))`);
		sql.exec("CREATE INDEX IF NOT EXISTS cursors_expiry ON cursors (expires_at)");
		sql.exec("CREATE INDEX IF NOT EXISTS cursors_use ON cursors (user, expires_at)");
	}

	// The cursor of an id, or undefined when it is unknown, expired or bound to another user or
	// scan. Looking is not using: touch() marks the use once the request's credential holds.
	find(id: string, owner: CursorBinding, now: number): Cursor | undefined {
		const [row] = this.sql
			.exec<Cursor & { user: string; binding: string }>(
				"SELECT id, after, user, binding, expires_at FROM cursors WHERE id = ?",
				id,
			)
			.toArray();
		if (!row || row.expires_at <= now || row.user !== owner.user || row.binding !== owner.binding) return undefined;
		return row;
	}

	// Using a cursor keeps it alive for another idle period.
	touch(cursor: Cursor, now: number) {
		const expires = now + CURSOR_IDLE_SECONDS;
		if (expires - cursor.expires_at < TOUCH_SECONDS) return;
		this.sql.exec("UPDATE cursors SET expires_at = ? WHERE id = ?", expires, cursor.id);
	}

	// The cursor for a position, the same one while it lives. Answers whether it is new: the
	// caller then makes sure an alarm will sweep it.
	issue(owner: CursorBinding, after: string, now: number): { id: string; created: boolean } {
		const [existing] = this.sql
			.exec<Cursor>(
				"SELECT id, after, expires_at FROM cursors WHERE user = ? AND binding = ? AND after = ?",
				owner.user,
				owner.binding,
				after,
			)
			.toArray();
		if (existing) {
			this.touch(existing, now);
			return { id: existing.id, created: false };
		}
		const id = randomBase64Url(16);
		this.sql.exec(
			"INSERT INTO cursors (id, user, binding, after, expires_at) VALUES (?, ?, ?, ?, ?)",
			id,
			owner.user,
			owner.binding,
			after,
			now + CURSOR_IDLE_SECONDS,
		);
		this.sql.exec(
			`DELETE FROM cursors WHERE user = ? AND id IN (
				SELECT id FROM cursors WHERE user = ? ORDER BY expires_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
			owner.user,
			owner.user,
			this.perUser,
		);
		return { id, created: true };
	}

	// Drops expired cursors; answers when the next one expires, if any remain.
	// When the cursors timer is due for a cursor issued at `at`: a second after it would expire.
	static sweepDue(at: number): number {
		return at + CURSOR_IDLE_SECONDS + 1;
	}

	// The cursors timer's step (timers.ts): due a second after the next cursor expires.
	sweepStep(now: number): number | undefined {
		const next = this.sweep(now);
		return next === undefined ? undefined : next + 1;
	}

	sweep(now: number): number | undefined {
		this.sql.exec("DELETE FROM cursors WHERE expires_at <= ?", now);
		const [row] = this.sql.exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM cursors").toArray();
		return row?.next ?? undefined;
	}
}

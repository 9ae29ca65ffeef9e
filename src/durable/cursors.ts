import { randomBase64Url } from "../base/crypto";

// Scan cursors live in the account's object: an opaque id standing for a position in the
// account's twins (the last uuid a page examined), bound to the user and to the scan's
// `match` and `details`. Asking again for the same position gives the same id, so retrying a
// page hands out the same next cursor.

export const CURSOR_IDLE_SECONDS = 24 * 60 * 60;
// Live cursors per user; one more evicts the least recently used (issued or resolved). A use
// pushes expires_at forward by the same idle period, so it orders cursors by last use.
export const MAX_CURSORS_PER_USER = 1000;

export type CursorBinding = { user: string; binding: string };

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

	// The position a cursor stands for, or undefined when it is unknown, expired or bound to
	// another user or scan. Using a cursor keeps it alive for another idle period.
	resolve(id: string, owner: CursorBinding, now: number): string | undefined {
		const after = this.find(id, owner, now);
		if (after !== undefined) this.touch(id, now);
		return after;
	}

	// The same without the use: for a request whose credential is not yet checked.
	find(id: string, owner: CursorBinding, now: number): string | undefined {
		const [row] = this.sql
			.exec<{ after: string; user: string; binding: string; expires_at: number }>(
				"SELECT after, user, binding, expires_at FROM cursors WHERE id = ?",
				id,
			)
			.toArray();
		if (!row || row.expires_at <= now || row.user !== owner.user || row.binding !== owner.binding) return undefined;
		return row.after;
	}

	touch(id: string, now: number) {
		this.sql.exec("UPDATE cursors SET expires_at = ? WHERE id = ?", now + CURSOR_IDLE_SECONDS, id);
	}

	issue(owner: CursorBinding, after: string, now: number): string {
		const [row] = this.sql
			.exec<{ id: string }>(
				`INSERT INTO cursors (id, user, binding, after, expires_at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (user, binding, after) DO UPDATE SET expires_at = excluded.expires_at RETURNING id`,
				randomBase64Url(16),
				owner.user,
				owner.binding,
				after,
				now + CURSOR_IDLE_SECONDS,
			)
			.toArray();
		this.sql.exec(
			`DELETE FROM cursors WHERE user = ? AND id IN (
				SELECT id FROM cursors WHERE user = ? ORDER BY expires_at DESC, rowid DESC LIMIT -1 OFFSET ?)`,
			owner.user,
			owner.user,
			this.perUser,
		);
		return row.id;
	}

	// Drops expired cursors; answers when the next one expires, if any remain.
	sweep(now: number): number | undefined {
		this.sql.exec("DELETE FROM cursors WHERE expires_at <= ?", now);
		const [row] = this.sql.exec<{ next: number | null }>("SELECT min(expires_at) AS next FROM cursors").toArray();
		return row?.next ?? undefined;
	}
}

// The object's journal: one line per write to roles, users, secrets and identities (who, what,
// on which uuid), the last JOURNAL_LENGTH kept. It lives in the object's own storage, beside
// the writes it records, not in D1.
const JOURNAL_LENGTH = 1000;

export type JournalLine = { seq: number; at: number; actor: string; action: string; target: string };

export class Journal {
	constructor(private readonly sql: SqlStorage) {
		// Objects from before the journal recorded more than role writes keep it under that name.
		const old = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'role_writes'").toArray();
		if (old.length) sql.exec("ALTER TABLE role_writes RENAME TO journal");
		sql.exec(`CREATE TABLE IF NOT EXISTS journal (
			seq INTEGER PRIMARY KEY AUTOINCREMENT, at REAL NOT NULL, actor TEXT NOT NULL,
			action TEXT NOT NULL, target TEXT NOT NULL)`);
	}

	record(at: number, actor: string, action: string, target: string) {
		this.sql.exec("INSERT INTO journal (at, actor, action, target) VALUES (?, ?, ?, ?)", at, actor, action, target);
		this.sql.exec("DELETE FROM journal WHERE seq <= (SELECT max(seq) FROM journal) - ?", JOURNAL_LENGTH);
	}

	// The latest lines, newest first.
	latest(limit: number): JournalLine[] {
		return this.sql
			.exec<JournalLine>("SELECT seq, at, actor, action, target FROM journal ORDER BY seq DESC LIMIT ?", limit)
			.toArray();
	}
}

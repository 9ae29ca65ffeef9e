import type { StreamRow } from "../../db/outbox";
import type { Event } from "./frames";

// The publishing account's recent messages, in its stream object's own SQLite storage: what a
// stream replays after a resume point, and what a reader that fell behind is served from. One
// row per message (a write's trigger and one topic), numbered in the order the account's writes
// committed. D1 is never read for it.

// The newest this many messages are kept, none older than KEEP_SECONDS.
export const KEEP_MESSAGES = 1000;
export const KEEP_SECONDS = 48 * 3600;

// `sight`: the id of what the rules of a confined reader read of the write that made the
// message (see sightOf), null when the write recorded none.
export type Message = Event & { topic: string; bytes: number; sight: number | null };

const encoder = new TextEncoder();

export class StreamLog {
	private readonly sql: SqlStorage;

	constructor(private readonly storage: DurableObjectStorage) {
		this.sql = storage.sql;
		const sql = this.sql;
		sql.exec(`CREATE TABLE IF NOT EXISTS log (
			id INTEGER PRIMARY KEY, topic TEXT NOT NULL, trigger TEXT NOT NULL, data TEXT NOT NULL,
			bytes INTEGER NOT NULL, at REAL NOT NULL)`);
		sql.exec("CREATE INDEX IF NOT EXISTS log_topic ON log (topic, id)");
		// What the rules of a confined reader read of each write whose messages the log holds (the
		// twin, the ledger before and after), once per write however many topics it reached; kept
		// while a message refers to it. A log from before it has its column added.
		sql.exec("CREATE TABLE IF NOT EXISTS sights (id INTEGER PRIMARY KEY, data TEXT NOT NULL)");
		const columns = sql.exec<{ name: string }>("PRAGMA table_info(log)").toArray();
		if (!columns.some((column) => column.name === "sight")) sql.exec("ALTER TABLE log ADD COLUMN sight INTEGER");
		// last_id: the newest id issued; pruned_above: the highest id pruned; last_outbox: the id
		// of the last outbox row taken (what makes append idempotent).
		sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
	}

	private get(key: string): number {
		return (
			(this.sql.exec<{ value: number }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0]?.value as
				| number
				| undefined) ?? 0
		);
	}

	private set(key: string, value: number) {
		this.sql.exec(
			"INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			key,
			value,
		);
	}

	lastId = () => this.get("last_id");
	prunedAbove = () => this.get("pruned_above");

	// Numbers the messages of the outbox rows not taken yet, the topics of one row in lexical
	// order, stores them and prunes: one transaction. A row taken before (a drain retried after
	// a lost answer) is skipped. Answers the new messages, oldest first.
	append(account: string, rows: StreamRow[], at: number): Message[] {
		return this.storage.transactionSync(() => {
			let lastId = this.lastId();
			let taken = this.get("last_outbox");
			const added: Message[] = [];
			for (const row of rows) {
				if (row.id <= taken) continue;
				taken = row.id;
				const topics = JSON.parse(row.topics) as Record<string, string[]>;
				const entries = JSON.parse(row.entries) as Record<string, unknown>;
				const sight = row.sight === null ? null : row.id;
				if (row.sight !== null)
					this.sql.exec("INSERT OR REPLACE INTO sights (id, data) VALUES (?, ?)", row.id, row.sight);
				for (const topic of Object.keys(topics).sort()) {
					const event = Object.fromEntries(topics[topic].map((name) => [name, entries[name]]));
					const message = {
						type: "Notification",
						trigger: row.trigger,
						message: crypto.randomUUID(),
						twin: row.twin,
						event,
						sent_ts: row.at,
						topic,
						account,
					};
					const data = JSON.stringify(message);
					const stored: Message = {
						id: ++lastId,
						event: row.trigger,
						data,
						topic,
						bytes: encoder.encode(data).byteLength,
						sight,
					};
					this.sql.exec(
						"INSERT INTO log (id, topic, trigger, data, bytes, at, sight) VALUES (?, ?, ?, ?, ?, ?, ?)",
						stored.id,
						topic,
						row.trigger,
						data,
						stored.bytes,
						row.at,
						sight,
					);
					added.push(stored);
				}
			}
			this.set("last_id", lastId);
			this.set("last_outbox", taken);
			this.prune(at);
			return added;
		});
	}

	// Drops what is past the newest KEEP_MESSAGES or older than KEEP_SECONDS, remembering the
	// highest id dropped: a resume point below it cannot be served whole.
	prune(at: number) {
		const cut = this.sql
			.exec<{ id: number | null }>(
				"SELECT max(id) AS id FROM log WHERE id <= ? OR at < ?",
				this.lastId() - KEEP_MESSAGES,
				at - KEEP_SECONDS,
			)
			.one().id;
		if (cut === null) return;
		this.sql.exec("DELETE FROM log WHERE id <= ?", cut);
		this.sql.exec("DELETE FROM sights WHERE id < (SELECT coalesce(min(sight), 9e18) FROM log)");
		if (cut > this.prunedAbove()) this.set("pruned_above", cut);
	}

	// What a write recorded for confined readers' rules, as JSON text; undefined when gone.
	sightOf(id: number): string | undefined {
		return this.sql.exec<{ data: string }>("SELECT data FROM sights WHERE id = ?", id).toArray()[0]?.data;
	}

	// The messages of `topics` after `id`, oldest first, read as they are iterated: a reader
	// stops when its window is full, and the rest is not read.
	*after(id: number, topics: string[]): Generator<Message> {
		const cursor = this.sql.exec<{
			id: number;
			trigger: string;
			data: string;
			topic: string;
			bytes: number;
			sight: number | null;
		}>(
			`SELECT id, trigger, data, topic, bytes, sight FROM log WHERE id > ? AND topic IN (${topics.map(() => "?").join(", ")}) ORDER BY id`,
			id,
			...topics,
		);
		for (const row of cursor)
			yield { id: row.id, event: row.trigger, data: row.data, topic: row.topic, bytes: row.bytes, sight: row.sight };
	}

	// Whether `id` is a message of one of `topics`.
	holds(id: number, topics: string[]): boolean {
		const placeholders = topics.map(() => "?").join(", ");
		return (
			this.sql.exec(`SELECT 1 FROM log WHERE id = ? AND topic IN (${placeholders})`, id, ...topics).toArray().length ===
			1
		);
	}

	// How many messages of `topics`, and how many bytes, lie in (from, to]: what a reader has
	// been sent and not acknowledged.
	between(from: number, to: number, topics: string[]): { count: number; bytes: number } {
		const row = this.sql
			.exec<{ count: number; bytes: number | null }>(
				`SELECT count(*) AS count, sum(bytes) AS bytes FROM log WHERE id > ? AND id <= ? AND topic IN (${topics.map(() => "?").join(", ")})`,
				from,
				to,
				...topics,
			)
			.one();
		return { count: row.count, bytes: row.bytes ?? 0 };
	}
}

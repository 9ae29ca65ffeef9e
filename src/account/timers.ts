// The account's object's one schedule (docs/design.md, "Background work: one schedule per
// object"): each kind of background work is a timer, named, due at a time and for an account,
// kept in the object's own SQLite storage. The object's single alarm is set for the earliest timer, and `run()` (the
// alarm) runs the step of every timer due. A feature sets its timer beside the writes that
// make work for it, no later than a time; its step does the work and answers when it is due
// next, or undefined when nothing is left. Nothing else sets the alarm.

// Seconds, as the API's timestamps.
export type Step = (account: string) => Promise<number | undefined>;

type Due = { name: string; account: string; due_ms: number };

export class Timers {
	constructor(
		private readonly storage: DurableObjectStorage,
		private readonly steps: Record<string, Step>,
	) {
		storage.sql.exec(
			"CREATE TABLE IF NOT EXISTS timers (name TEXT PRIMARY KEY, account TEXT NOT NULL, due_ms INTEGER NOT NULL)",
		);
	}

	// `name` due no later than `atSeconds` (an earlier time already set stays).
	async by(name: string, account: string, atSeconds: number, firing?: number): Promise<void> {
		if (!(name in this.steps)) throw new Error(`No step is registered as ${name}`);
		const due = Math.ceil(atSeconds * 1000);
		this.storage.sql.exec(
			"INSERT INTO timers (name, account, due_ms) VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE SET account = excluded.account, due_ms = min(due_ms, excluded.due_ms)",
			name,
			account,
			due,
		);
		await this.arm(firing);
	}

	// The alarm: each timer due runs its step once. A write during a step may set the same
	// timer again; the step's answer then only brings it earlier.
	async run(): Promise<void> {
		const at = Date.now();
		const due = this.storage.sql
			.exec<Due>("SELECT name, account, due_ms FROM timers WHERE due_ms <= ? ORDER BY due_ms", at)
			.toArray();
		for (const { name, account } of due) {
			this.storage.sql.exec("DELETE FROM timers WHERE name = ? AND due_ms <= ?", name, at);
			const next = await this.steps[name]?.(account);
			if (next !== undefined) await this.by(name, account, next, at);
		}
		await this.arm(at);
	}

	// The alarm no later than the earliest timer. While the alarm runs, the one that fired (due
	// by `firing`) counts as none.
	private async arm(firing = 0): Promise<void> {
		const [row] = this.storage.sql.exec<{ next: number | null }>("SELECT min(due_ms) AS next FROM timers").toArray();
		const next = row?.next ?? null;
		if (next === null) return;
		const current = await this.storage.getAlarm();
		if (current === null || current <= firing || current > next) await this.storage.setAlarm(next);
	}
}

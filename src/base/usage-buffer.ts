import { addCounts, isEmpty, type UsageCounts, type UsageRow } from "./usage";

// The counts an isolate has made and not yet handed to the accounts' objects: by account,
// then by (user, hour). An account is "armed" from its first count after a flush until the
// flush that count started runs, so one timer at a time waits per account, whatever the
// traffic; a read that takes the counts early leaves the timer as it is.
export class UsageBuffer {
	private readonly pending = new Map<string, Map<string, UsageRow>>();
	private readonly armed = new Set<string>();

	// Answers true when this count must start the account's flush timer.
	add(account: string, user: string | null, hour: number, counts: UsageCounts): boolean {
		if (isEmpty(counts)) return false;
		let rows = this.pending.get(account);
		if (!rows) {
			rows = new Map();
			this.pending.set(account, rows);
		}
		const key = `${user ?? ""}/${hour}`;
		let row = rows.get(key);
		if (!row) {
			row = { user, hour, counts: {} };
			rows.set(key, row);
		}
		addCounts(row.counts, counts);
		if (this.armed.has(account)) return false;
		this.armed.add(account);
		return true;
	}

	// The account's counts, gone from the buffer: whoever takes them sends them once, or they
	// are lost. `disarm` is the flush's: the next count starts a new timer.
	take(account: string, disarm = false): UsageRow[] {
		if (disarm) this.armed.delete(account);
		const rows = this.pending.get(account);
		this.pending.delete(account);
		return rows ? [...rows.values()] : [];
	}

	// Accounts with counts waiting (for tests and the isolate's own bookkeeping).
	get size(): number {
		return this.pending.size;
	}
}

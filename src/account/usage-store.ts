import { hourOf, isEmpty, USAGE_FIELDS, type UsageCounts, type UsageRow } from "../base/usage";
import { now } from "../base/time";

// The account's usage, per hour, in the object's own storage (not D1: counting must add no
// query to the shared database). Each hour has a row per user that counted in it and one for
// the account, which every count joins too, so reading the account's usage never sums over
// its users: ≤ 1 row per hour read, whatever the number of users.
const ACCOUNT = "";
// Hours kept: 90 days.
export const USAGE_RETENTION_HOURS = 90 * 24;

const COLUMNS = USAGE_FIELDS.join(", ");
const UPSERT = `INSERT INTO usage (subject, hour, ${COLUMNS}) VALUES (?, ?, ${USAGE_FIELDS.map(() => "?").join(", ")})
	ON CONFLICT (subject, hour) DO UPDATE SET ${USAGE_FIELDS.map((f) => `${f} = ${f} + excluded.${f}`).join(", ")}`;

export class UsageStore {
	// The oldest hour kept when pruning last ran: it runs at most once an hour per object.
	private pruned = -1;

	constructor(private readonly sql: SqlStorage) {
		sql.exec(`CREATE TABLE IF NOT EXISTS usage (
			subject TEXT NOT NULL, hour INTEGER NOT NULL,
			${USAGE_FIELDS.map((f) => `${f} INTEGER NOT NULL DEFAULT 0`).join(", ")},
			PRIMARY KEY (subject, hour)) WITHOUT ROWID`);
		sql.exec("CREATE INDEX IF NOT EXISTS usage_hour ON usage (hour)");
	}

	// Counts at time `at` (seconds), for a user of the account or (null) the account alone.
	// Synchronous: a write calls it right after its batch commits, without a yield between.
	add(at: number, user: string | null, counts: UsageCounts) {
		this.addRows([{ user, hour: hourOf(at), counts }]);
	}

	// Rows the Worker counted (see usage-client.ts), or the object itself. An hour past the
	// retention is not kept (an isolate's counts can arrive no later than seconds after it).
	addRows(rows: UsageRow[]) {
		const oldest = hourOf(now()) - USAGE_RETENTION_HOURS;
		if (oldest > this.pruned) this.prune(oldest);
		for (const { user, hour, counts } of rows) {
			if (isEmpty(counts) || hour < oldest) continue;
			const values = USAGE_FIELDS.map((field) => Math.trunc(counts[field] ?? 0));
			if (user !== null) this.sql.exec(UPSERT, user, hour, ...values);
			this.sql.exec(UPSERT, ACCOUNT, hour, ...values);
		}
	}

	// Hourly rows of a user (or the account) from hour `from` to `to`, both included, ascending.
	read(user: string | null, from: number, to: number): { hour: number; counts: UsageCounts }[] {
		const rows = this.sql.exec<Record<string, number>>(
			`SELECT hour, ${COLUMNS} FROM usage WHERE subject = ? AND hour BETWEEN ? AND ? ORDER BY hour`,
			user ?? ACCOUNT,
			from,
			to,
		);
		return rows.toArray().map(({ hour, ...counts }) => ({ hour, counts }));
	}

	private prune(oldest: number) {
		this.pruned = oldest;
		this.sql.exec("DELETE FROM usage WHERE hour < ?", oldest);
	}
}

import { selectedColumns } from "./columns";

// Counts what a request costs in D1: statements, round trips (`calls`: a statement run alone is
// one, a batch of any length is one), rows read and written, time. Every response reports it
// in Server-Timing, so a caller can see what a call cost and how many times it waited for D1.
//
// D1's raw() (what drizzle uses for typed selects) returns no meta, so a metered statement
// answers raw() from all(), turning each row object into its values in column order, as
// drizzle already does for every statement it runs in a batch. Two selected columns of the
// same name would collapse into one key and shift every value after it, so raw() counts the
// columns the statement selects and refuses rows with fewer keys: give one of them an alias.

// `bookmarks`: the newest D1 session bookmark the work saw, per database binding (see "Global
// callers" in docs/design.md).
export type D1Cost = {
	queries: number;
	calls: number;
	rowsRead: number;
	rowsWritten: number;
	ms: number;
	bookmarks?: Record<string, string>;
};

export class D1Meter {
	queries = 0;
	calls = 0;
	rowsRead = 0;
	rowsWritten = 0;
	ms = 0;
	private readonly sessions: [string, D1DatabaseSession][] = [];
	private readonly latest = new Map<string, string>();

	add(cost: Partial<D1Cost>) {
		this.queries += cost.queries ?? 0;
		this.calls += cost.calls ?? 0;
		this.rowsRead += cost.rowsRead ?? 0;
		this.rowsWritten += cost.rowsWritten ?? 0;
		this.ms += cost.ms ?? 0;
		for (const [binding, bookmark] of Object.entries(cost.bookmarks ?? {})) this.note(binding, bookmark);
	}

	private note(binding: string, bookmark: string | null) {
		const kept = newest(this.latest.get(binding) ?? null, bookmark);
		if (kept !== null) this.latest.set(binding, kept);
	}

	// The newest bookmark seen of each database. Bookmarks sort oldest to newest as strings.
	bookmarks(): Record<string, string> {
		for (const [binding, session] of this.sessions) this.note(binding, session.getBookmark());
		return Object.fromEntries(this.latest);
	}

	// The newest bookmark of one database, or null.
	latestBookmark(binding: string): string | null {
		return this.bookmarks()[binding] ?? null;
	}

	record(meta: D1Meta | undefined) {
		this.add({
			queries: 1,
			rowsRead: meta?.rows_read ?? 0,
			rowsWritten: meta?.rows_written ?? 0,
			ms: meta?.duration ?? 0,
		});
	}

	// The one way a read over items the caller may not all see is counted. What D1 reports for
	// it would count the hidden rows, and the index steps around them, so that figure is
	// dropped: rows_read gains `perRow` for each row the caller sees (its index entry, plus one
	// for each table joined to it by key) and nothing for the others. A hidden item and an
	// absent one cost the same in Server-Timing because the figure is made from what the
	// caller sees, not by subtracting what it may not. Statements and time still count. The
	// read must not run beside other metered work of the same request, whose rows would go too.
	async sighted<T>(read: () => Promise<T[]>, sees: (row: T) => boolean, perRow = 1): Promise<T[]> {
		const before = this.rowsRead;
		const rows = await read();
		const kept = rows.filter(sees);
		this.rowsRead = before + kept.length * perRow;
		return kept;
	}

	// The same for a lookup of one item: it, when found and seen, else undefined.
	async sightedOne<T>(
		read: () => Promise<T | undefined>,
		sees: (row: T) => boolean,
		perRow = 1,
	): Promise<T | undefined> {
		const [row] = await this.sighted(
			async () => {
				const found = await read();
				return found === undefined ? [] : [found];
			},
			sees,
			perRow,
		);
		return row;
	}

	snapshot(): D1Cost {
		const { queries, calls, rowsRead, rowsWritten, ms } = this;
		return { queries, calls, rowsRead, rowsWritten, ms, bookmarks: this.bookmarks() };
	}

	serverTiming(): string {
		const d1 = `d1;dur=${this.ms.toFixed(1)};desc="queries=${this.queries} rows_read=${this.rowsRead} rows_written=${this.rowsWritten} calls=${this.calls}"`;
		return [d1, ...this.metrics].join(", ");
	}

	// Server-Timing metrics of work past D1 (a timeseries query's chunk objects), after d1's.
	readonly metrics: string[] = [];

	// A session is wrapped like the database itself; its bookmark is followed under its binding.
	wrap(db: D1Database | D1DatabaseSession, binding = "DB_0"): D1Database {
		const meter = this;
		if ("getBookmark" in db) this.sessions.push([binding, db]);
		return new Proxy(db, {
			get(target, property) {
				if (property === "prepare") return (query: string) => new MeteredStatement(target.prepare(query), meter, query);
				if (property === "batch") {
					// A statement prepared on an unwrapped database may join the batch (it commits
					// with the rest) without being counted: work the caller must not see the cost
					// of, since it depends on what the caller may not see (see account/index-tables.ts).
					// Each statement counts for the meter it was prepared with: a batch the account's
					// object commits for several requests (account/ledger-groups.ts) counts each
					// request's statements, and one round trip, for that request.
					return async (statements: (MeteredStatement | D1PreparedStatement)[]) => {
						const results = await target.batch(statements.map((s) => (s instanceof MeteredStatement ? s.inner : s)));
						const meters = new Set<D1Meter>();
						results.forEach((result, i) => {
							const statement = statements[i];
							if (!(statement instanceof MeteredStatement)) return;
							statement.meter.record(result.meta);
							meters.add(statement.meter);
						});
						for (const counted of meters) counted.calls += 1;
						return results;
					};
				}
				const value = Reflect.get(target, property, target);
				return typeof value === "function" ? value.bind(target) : value;
			},
		}) as D1Database;
	}
}

function newest(a: string | null, b: string | null) {
	return a === null || (b !== null && b > a) ? b : a;
}

class MeteredStatement {
	constructor(
		readonly inner: D1PreparedStatement,
		readonly meter: D1Meter,
		private readonly query: string,
	) {}

	bind(...values: unknown[]) {
		return new MeteredStatement(this.inner.bind(...values), this.meter, this.query);
	}

	async all<T>() {
		const result = await this.inner.all<T>();
		this.meter.record(result.meta);
		this.meter.calls += 1;
		return result;
	}

	async run<T>() {
		const result = await this.inner.run<T>();
		this.meter.record(result.meta);
		this.meter.calls += 1;
		return result;
	}

	async first<T>(column?: string) {
		const { results } = await this.all<Record<string, unknown>>();
		const row = results[0];
		if (row === undefined) return null;
		return (column === undefined ? row : row[column]) as T;
	}

	async raw<T extends unknown[]>(options?: { columnNames?: boolean }) {
		const { results } = await this.all<Record<string, unknown>>();
		const selected = selectedColumns(this.query);
		const keys = results.length ? Object.keys(results[0]).length : undefined;
		if (selected !== undefined && keys !== undefined && keys !== selected) {
			throw new Error(
				`A metered statement selects ${selected} columns but its rows have ${keys}: two selected columns share a name; give one an alias (${this.query})`,
			);
		}
		const rows = results.map((row) => Object.values(row) as T);
		if (!options?.columnNames) return rows;
		return [Object.keys(results[0] ?? {}) as T, ...rows];
	}
}

import { selectedColumns } from "./columns";

// Counts what a request costs in D1: statements, rows read and written, time. Every response
// reports it in Server-Timing, so a caller can see what a call cost.
//
// D1's raw() (what drizzle uses for typed selects) returns no meta, so a metered statement
// answers raw() from all(), turning each row object into its values in column order, as
// drizzle already does for every statement it runs in a batch. Two selected columns of the
// same name would collapse into one key and shift every value after it, so raw() counts the
// columns the statement selects and refuses rows with fewer keys: give one of them an alias.

// `bookmark`: the newest D1 session bookmark the work saw (see the README's "Global callers").
export type D1Cost = { queries: number; rowsRead: number; rowsWritten: number; ms: number; bookmark?: string | null };

export class D1Meter implements D1Cost {
	queries = 0;
	rowsRead = 0;
	rowsWritten = 0;
	ms = 0;
	private readonly sessions: D1DatabaseSession[] = [];
	private latest: string | null = null;

	add(cost: Partial<D1Cost>) {
		this.queries += cost.queries ?? 0;
		this.rowsRead += cost.rowsRead ?? 0;
		this.rowsWritten += cost.rowsWritten ?? 0;
		this.ms += cost.ms ?? 0;
		this.latest = newest(this.latest, cost.bookmark ?? null);
	}

	// Bookmarks sort oldest to newest as strings.
	latestBookmark(): string | null {
		return this.sessions.reduce((latest, session) => newest(latest, session.getBookmark()), this.latest);
	}

	record(meta: D1Meta | undefined) {
		this.add({ queries: 1, rowsRead: meta?.rows_read ?? 0, rowsWritten: meta?.rows_written ?? 0, ms: meta?.duration ?? 0 });
	}

	// A lookup that found a row the caller may not see reports the rows an absent one reads
	// (none, by primary key): otherwise Server-Timing would tell the two apart.
	concealReadsSince(before: D1Cost) {
		this.rowsRead = before.rowsRead;
	}

	// A list read drops the rows the caller may not see and reports what it would have read had
	// they not existed, so Server-Timing cannot count them. Each dropped row cost its statement
	// `perRow` rows_read: its index entry, plus one for each table joined to it by key. The rows
	// fall in ranges of an index (`range` names a row's; one range by default), and a scan steps
	// onto the entry past the end of a range it found rows in: a range whose rows are all hidden
	// would have found none, so that step goes too. At the very end of an index there is no such
	// entry; the figure then stays at what the statement had read before its rows (`before`).
	concealRows<T>(before: D1Cost, rows: T[], visible: (row: T) => boolean, cost: { perRow: number; range?: (row: T) => string }): T[] {
		const kept: T[] = [];
		const ranges = new Map<string, boolean>();
		for (const row of rows) {
			const key = cost.range?.(row) ?? "";
			const shown = visible(row);
			if (shown) kept.push(row);
			ranges.set(key, shown || ranges.get(key) === true);
		}
		const emptied = [...ranges.values()].filter((shown) => !shown).length;
		const hidden = (rows.length - kept.length) * cost.perRow + emptied;
		this.rowsRead = Math.max(before.rowsRead, this.rowsRead - hidden);
		return kept;
	}

	snapshot(): D1Cost {
		const { queries, rowsRead, rowsWritten, ms } = this;
		return { queries, rowsRead, rowsWritten, ms, bookmark: this.latestBookmark() };
	}

	serverTiming(): string {
		return `d1;dur=${this.ms.toFixed(1)};desc="queries=${this.queries} rows_read=${this.rowsRead} rows_written=${this.rowsWritten}"`;
	}

	// A session is wrapped like the database itself; its bookmark is followed.
	wrap(db: D1Database | D1DatabaseSession): D1Database {
		const meter = this;
		if ("getBookmark" in db) this.sessions.push(db);
		return new Proxy(db, {
			get(target, property) {
				if (property === "prepare") return (query: string) => new MeteredStatement(target.prepare(query), meter, query);
				if (property === "batch") {
					return async (statements: MeteredStatement[]) => {
						const results = await target.batch(statements.map((s) => s.inner));
						for (const result of results) meter.record(result.meta);
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
		private readonly meter: D1Meter,
		private readonly query: string,
	) {}

	bind(...values: unknown[]) {
		return new MeteredStatement(this.inner.bind(...values), this.meter, this.query);
	}

	async all<T>() {
		const result = await this.inner.all<T>();
		this.meter.record(result.meta);
		return result;
	}

	async run<T>() {
		const result = await this.inner.run<T>();
		this.meter.record(result.meta);
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

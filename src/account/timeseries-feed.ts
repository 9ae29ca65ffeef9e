import type { BatchItem } from "drizzle-orm/batch";
import type { ErrorDetail } from "../base/errors";
import { type Json, utf8Bytes } from "../base/json";
import type { Database } from "../db/client";
import { logLine, logStatements } from "../db/log";
import * as db_ from "../db/timeseries";
import type { TimeseriesOutboxRow, TimeseriesTableRow } from "../db/timeseries";
import { checkEntryTimeseries } from "../rules/timeseries-definition";
import { pointOf } from "../rules/timeseries-points";
import { type Budget, refuseOverBudget } from "../rules/strings";
import { chunkObject } from "../timeseries/chunk-client";
import { chunkSpec, chunkStart, measurementKey, pointTable } from "../timeseries/spec";
import type { Point } from "../timeseries/types";
import type { StoredEntry } from "./ledger-view";
import type { TimeseriesCatalog } from "./timeseries-tables";

// The points a ledger write gives its account's Timeseries tables (docs/timeseries.md, "Storage
// and consistency"). A value change of an entry naming tables yields, per table, one point or
// one reason it was dropped: rows of the D1 outbox written in the write's own batch, so a point
// exists exactly when its change does. Once the batch has landed the object hands the points to
// their chunk objects (at most MAX_CHUNKS_IN_STEP, before the write answers); what is left, and
// the account log's lines for dropped points, go with the timeseries timer's drain. A chunk
// object stores a point once by (seq, entry): a redelivery changes nothing.

// Chunk objects one write's step calls; a write touching more leaves the rest to the drain.
export const MAX_CHUNKS_IN_STEP = 32;
// Outbox rows one round of the drain takes.
const DRAIN_ROWS = 500;

export type ChangedEntry = { name: string; entry: StoredEntry };
export type FeedInput = {
	account: string;
	twin: string;
	owner: string;
	values: Record<string, Json>;
	changed: ChangedEntry[];
	at: number;
	// The request's work budget: templates and coercions spend it (past it the write is refused).
	budget?: Budget;
};

// A point on its way: the table row it was made for and the chunk it belongs to.
type Delivery = { table: TimeseriesTableRow; start: number; point: Point; bytes: number };

export type FeedPlan = { statements: BatchItem<"sqlite">[]; deliveries: Delivery[] };

const SEQ_TABLE =
	"CREATE TABLE IF NOT EXISTS timeseries_seq (id INTEGER PRIMARY KEY CHECK (id = 1), seq INTEGER NOT NULL)";

export class TimeseriesFeed {
	// Writes whose points have all reached their chunk objects, whose outbox rows the drain
	// deletes without delivering them again. Forgotten on a restart: a redelivery is harmless.
	private readonly delivered = new Set<number>();
	private draining: Promise<unknown> = Promise.resolve();

	constructor(
		private readonly sqlStorage: SqlStorage,
		private readonly catalog: TimeseriesCatalog,
		private readonly env: () => Env,
	) {
		sqlStorage.exec(SEQ_TABLE);
	}

	// The entries' `timeseries` as the write would store them, checked against the tables the
	// account has now: 400101 details, at `entries.<name>.timeseries…`.
	async check(account: string, entries: Record<string, { timeseries?: unknown }>): Promise<ErrorDetail[]> {
		const given = Object.entries(entries).filter(([, change]) => change.timeseries != null);
		if (given.length === 0) return [];
		const tables = await this.catalog.all(account);
		const byName = new Map(tables.map((row) => [row.name, { dimensions: row.dimensions.names }]));
		return given.flatMap(([name, change]) =>
			checkEntryTimeseries(change.timeseries, (table) => byName.get(table)).map((detail) => ({
				path: `entries.${name}.timeseries${detail.path ? `.${detail.path}` : ""}`,
				message: detail.message,
			})),
		);
	}

	// A write's outbox rows, chunk notes and counts. Nothing when no changed entry names a table.
	async plan(db: Database, input: FeedInput): Promise<FeedPlan> {
		const named = input.changed.filter(({ entry }) => entry.timeseries !== null);
		if (named.length === 0) return { statements: [], deliveries: [] };
		const tables = new Map((await this.catalog.all(input.account)).map((row) => [row.name, row]));
		const seq = this.nextSeq();
		const rows: db_.TimeseriesOutboxInsert[] = [];
		const deliveries: Delivery[] = [];
		// In entry-name order, so that the outbox's order is the points' (ts, seq, entry) order.
		for (const { name, entry } of [...named].sort((a, b) => (a.name < b.name ? -1 : 1))) {
			for (const [tableName, templates] of Object.entries(entry.timeseries ?? {})) {
				const table = tables.get(tableName);
				// A deleted table is skipped; a new one of its name is fed again.
				if (!table) continue;
				const made = refuseOverBudget(`entries.${name}.timeseries.${tableName}`, () =>
					pointOf({
						table: pointTable(table),
						templates,
						entry: name,
						value: entry.value,
						value_changed_ts: entry.value_changed_ts,
						at: input.at,
						entries: input.values,
						twin: input.twin,
						owner: input.owner,
						ledger: input.account,
						budget: input.budget,
					}),
				);
				const base = { account: input.account, table: table.uuid, generation: table.generation, seq, entry: name };
				if ("dropped" in made) {
					rows.push({
						...base,
						twin: input.twin,
						ts: null,
						dims: "[]",
						measurement: null,
						value: "null",
						bytes: 0,
						dropped: made.dropped,
						at: input.at,
					});
					continue;
				}
				// Stored under the measurement's key (timeseries/spec.ts).
				const point: Point = { ...made.point, seq, measurement: measurementKey(table, made.point.measurement) };
				const dims = JSON.stringify(point.dims);
				const value = JSON.stringify(point.value);
				const bytes = pointBytes(point, dims, value);
				rows.push({
					...base,
					twin: point.twin,
					ts: point.ts,
					dims,
					measurement: point.measurement,
					value,
					bytes,
					dropped: null,
					at: input.at,
				});
				deliveries.push({ table, start: chunkStart(table, point.ts), point, bytes });
			}
		}
		if (rows.length === 0) return { statements: [], deliveries: [] };
		return { statements: statementsOf(db, rows, deliveries), deliveries };
	}

	// Once a write's batch has landed: its points to their chunk objects, before it answers. A
	// failure leaves them to the drain, which the timer runs.
	async deliver(deliveries: Delivery[]): Promise<boolean> {
		if (deliveries.length === 0) return true;
		const seqs = new Set(deliveries.map((d) => d.point.seq));
		const chunks = [...byChunk(deliveries).values()];
		// Past the bound the first chunks get their points now; the drain delivers the writes again.
		const complete = chunks.length <= MAX_CHUNKS_IN_STEP;
		try {
			const results = await Promise.all(
				chunks
					.slice(0, MAX_CHUNKS_IN_STEP)
					.map(({ table, start, points }) =>
						chunkObject(this.env(), table.uuid, table.generation, start).insert(this.spec(table, start), points),
					),
			);
			// A chunk that refused points (full) leaves its write to the drain, which logs them.
			if (!complete || results.some((result) => result.full.length > 0)) return false;
		} catch (error) {
			console.error(JSON.stringify({ timeseries: "delivery", error: String(error) }));
			return false;
		}
		for (const seq of seqs) this.delivered.add(seq);
		return true;
	}

	// The outbox of the account, a round at a time: points delivered (again, if need be), dropped
	// points and those a full chunk refused written to the account log, rows of a table's older
	// generation or of a deleted table let go. Drains run one at a time. Answers whether rows are
	// left.
	drain(db: Database, account: string): Promise<boolean> {
		const run = this.draining.then(() => this.drainRound(db, account));
		this.draining = run.catch(() => undefined);
		return run;
	}

	private async drainRound(db: Database, account: string): Promise<boolean> {
		const rows = await db_.outboxPage(db, account, DRAIN_ROWS);
		if (rows.length === 0) return false;
		const tables = new Map((await this.catalog.all(account)).map((row) => [row.uuid, row]));
		const done: number[] = [];
		const lines: string[] = [];
		const statements: BatchItem<"sqlite">[] = [];
		const deliveries: (Delivery & { id: number })[] = [];
		const logDropped = (row: TimeseriesOutboxRow, table: TimeseriesTableRow, reason: string) =>
			lines.push(
				logLine("Timeseries point dropped", { table: table.name, twin: row.twin, entry: row.entry, reason }, row.at),
			);
		for (const row of rows) {
			const table = tables.get(row.table);
			if (!table || table.generation !== row.generation) {
				done.push(row.id);
				continue;
			}
			if (row.dropped !== null) {
				logDropped(row, table, row.dropped);
				done.push(row.id);
				continue;
			}
			if (this.delivered.has(row.seq)) {
				done.push(row.id);
				continue;
			}
			const point = pointOfRow(row);
			deliveries.push({ id: row.id, table, start: chunkStart(table, point.ts), point, bytes: row.bytes });
		}
		const chunks = byChunk(deliveries);
		const now = [...chunks.values()].slice(0, MAX_CHUNKS_IN_STEP);
		const results = await Promise.allSettled(
			now.map(({ table, start, points }) =>
				chunkObject(this.env(), table.uuid, table.generation, start).insert(this.spec(table, start), points),
			),
		);
		results.forEach((result, i) => {
			const chunk = now[i]!;
			if (result.status === "rejected") {
				console.error(JSON.stringify({ timeseries: "delivery", error: String(result.reason) }));
				return;
			}
			const full = new Set(result.value.full.map((key) => `${key.seq}:${key.entry}`));
			let refused = 0;
			let refusedBytes = 0;
			for (const delivery of chunk.deliveries) {
				const { point } = delivery;
				if (full.has(`${point.seq}:${point.entry}`)) {
					const row = rows.find((r) => r.id === delivery.id)!;
					logDropped(row, chunk.table, "chunk full");
					refused++;
					refusedBytes += delivery.bytes;
				}
				done.push(delivery.id);
			}
			if (refused) {
				statements.push(db_.countPoints(db, chunk.table.uuid, chunk.table.generation, -refused, -refusedBytes));
				statements.push(db_.markFull(db, chunk.table.uuid, chunk.table.generation));
			}
		});
		if (done.length === 0) return true;
		const at = Date.now() / 1000;
		await db.batch([db_.deleteOutbox(db, account, done), ...statements, ...logStatements(db, account, at, lines)]);
		if (statements.length) this.catalog.forget();
		for (const row of rows) if (done.includes(row.id)) this.delivered.delete(row.seq);
		return rows.length === DRAIN_ROWS || done.length < rows.length;
	}

	private spec(table: TimeseriesTableRow, start: number) {
		return chunkSpec(table, start, Number(this.env().MAX_TIMESERIES_CHUNK_BYTES));
	}

	// The account's write sequence: each write that makes points takes the next number, kept in
	// the object's storage so that it never repeats, also across restarts.
	private nextSeq(): number {
		const [row] = this.sqlStorage
			.exec<{ seq: number }>(
				"INSERT INTO timeseries_seq (id, seq) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET seq = seq + 1 RETURNING seq",
			)
			.toArray();
		return row!.seq;
	}
}

// What a point costs its chunk, approximately: its key, twin, dimensions and value as stored.
function pointBytes(point: Point, dims: string, value: string): number {
	return (
		24 +
		utf8Bytes(point.entry) +
		utf8Bytes(point.twin) +
		utf8Bytes(point.measurement) +
		utf8Bytes(dims) +
		utf8Bytes(value)
	);
}

function pointOfRow(row: TimeseriesOutboxRow): Point {
	return {
		seq: row.seq,
		entry: row.entry,
		ts: row.ts ?? row.at,
		twin: row.twin,
		dims: JSON.parse(row.dims) as Json[],
		measurement: row.measurement ?? "",
		value: JSON.parse(row.value) as Json,
	};
}

function byChunk<D extends Delivery>(deliveries: D[]) {
	const chunks = new Map<string, { table: TimeseriesTableRow; start: number; points: Point[]; deliveries: D[] }>();
	for (const delivery of deliveries) {
		const key = `${delivery.table.uuid}:${delivery.table.generation}:${delivery.start}`;
		const chunk = chunks.get(key) ?? { table: delivery.table, start: delivery.start, points: [], deliveries: [] };
		chunk.points.push(delivery.point);
		chunk.deliveries.push(delivery);
		chunks.set(key, chunk);
	}
	return chunks;
}

// The outbox rows, the chunks they fall in, and the tables' counts.
function statementsOf(db: Database, rows: db_.TimeseriesOutboxInsert[], deliveries: Delivery[]): BatchItem<"sqlite">[] {
	const statements: BatchItem<"sqlite">[] = [db_.insertOutbox(db, rows)];
	if (deliveries.length === 0) return statements;
	const chunks = [...byChunk(deliveries).values()].map(({ table, start }) => ({
		table: table.uuid,
		generation: table.generation,
		start,
	}));
	statements.push(db_.noteChunks(db, deliveries[0]!.table.account, chunks));
	const counts = new Map<string, { table: TimeseriesTableRow; rows: number; bytes: number }>();
	for (const { table, bytes } of deliveries) {
		const count = counts.get(table.uuid) ?? { table, rows: 0, bytes: 0 };
		count.rows++;
		count.bytes += bytes;
		counts.set(table.uuid, count);
	}
	for (const { table, rows: n, bytes } of counts.values())
		statements.push(db_.countPoints(db, table.uuid, table.generation, n, bytes));
	return statements;
}

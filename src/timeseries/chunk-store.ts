import type { Json } from "../base/json";
import {
	type MeasurementType,
	type Point,
	type RawPosition,
	ROLLUP_STEPS,
	type RollupPosition,
	type RollupRow,
	type RollupStep,
} from "./types";

// A chunk object's SQLite storage. `raw` holds one row per point, clustered in read order
// (ts, seq, entry) with (seq, entry) unique, which is what makes a redelivery a no-op. Each
// rollup tier is a table of its own (r_1m, r_1h, ...), clustered in read order, so that
// retention drops it whole. `tiers` says which tables exist and whether each is still being
// filled from raw; `meta` keeps the spec and the running counts.

export type TierState = "ready" | "building";

export const RAW_TABLE = "raw";
export const rollupTable = (step: RollupStep) => {
	if (!(step in ROLLUP_STEPS)) throw new Error(`unknown rollup step ${step}`);
	return `r_${step}`;
};

type RawRow = {
	ts: number;
	seq: number;
	entry: string;
	twin: string;
	dims: string;
	measurement: string;
	value: string;
};
type StoredRollup = {
	bucket: number;
	twin: string;
	dims: string;
	measurement: string;
	count: number;
	sum: number | null;
	min: number | null;
	max: number | null;
	first: string | null;
	first_ts: number | null;
	first_seq: number | null;
	last: string | null;
	last_ts: number | null;
	last_seq: number | null;
};

const RAW_COLUMNS = "ts, seq, entry, twin, dims, measurement, value";
const ROLLUP_COLUMNS =
	"bucket, twin, dims, measurement, count, sum, min, max, first, first_ts, first_seq, last, last_ts, last_seq";

// A point's stored size: its text, numbers counted as 8 bytes each.
const encoder = new TextEncoder();
export function pointBytes(point: Point): number {
	const text = point.entry + point.twin + JSON.stringify(point.dims) + point.measurement + JSON.stringify(point.value);
	return encoder.encode(text).byteLength + 16;
}

const compareKey = (a: RawPosition, b: RawPosition) =>
	a.ts - b.ts || a.seq - b.seq || (a.entry < b.entry ? -1 : a.entry > b.entry ? 1 : 0);
export const atOrBefore = (point: RawPosition, position: RawPosition | null) =>
	position !== null && compareKey(point, position) <= 0;

export class ChunkStore {
	// Whether the bookkeeping tables exist: they are made by the first write, not by a read, so
	// that an object emptied by retention or a wipe stays empty until it is written again.
	private made: boolean;

	constructor(private readonly sql: SqlStorage) {
		this.made = sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'tiers'").toArray().length > 0;
	}

	ensure() {
		if (this.made) return;
		this.sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
		// progress: the last raw key a building tier's walk folded in (JSON), null before its first.
		this.sql.exec("CREATE TABLE IF NOT EXISTS tiers (tier TEXT PRIMARY KEY, state TEXT NOT NULL, progress TEXT)");
		this.made = true;
	}

	get exists() {
		return this.made;
	}

	// After deleteAll(): every table is gone.
	forget() {
		this.made = false;
	}

	getMeta<T>(key: string): T | undefined {
		if (!this.made) return undefined;
		const row = this.sql.exec<{ value: string }>("SELECT value FROM meta WHERE key = ?", key).toArray()[0];
		return row ? (JSON.parse(row.value) as T) : undefined;
	}

	setMeta(key: string, value: unknown) {
		this.sql.exec(
			"INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
			key,
			JSON.stringify(value),
		);
	}

	tiers(): Map<string, { state: TierState; progress: RawPosition | null }> {
		if (!this.made) return new Map();
		const rows = this.sql.exec<{ tier: string; state: TierState; progress: string | null }>(
			"SELECT tier, state, progress FROM tiers",
		);
		return new Map(
			[...rows].map((r) => [r.tier, { state: r.state, progress: r.progress ? JSON.parse(r.progress) : null }]),
		);
	}

	setTier(tier: string, state: TierState, progress: RawPosition | null) {
		this.sql.exec(
			`INSERT INTO tiers (tier, state, progress) VALUES (?, ?, ?)
			ON CONFLICT (tier) DO UPDATE SET state = excluded.state, progress = excluded.progress`,
			tier,
			state,
			progress ? JSON.stringify(progress) : null,
		);
	}

	createRaw() {
		this.sql.exec(`CREATE TABLE IF NOT EXISTS raw (
			ts REAL NOT NULL, seq INTEGER NOT NULL, entry TEXT NOT NULL, twin TEXT NOT NULL, dims TEXT NOT NULL,
			measurement TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (ts, seq, entry)) WITHOUT ROWID`);
		this.sql.exec("CREATE UNIQUE INDEX IF NOT EXISTS raw_key ON raw (seq, entry)");
	}

	// min/max have no declared type: a timestamp or an integer stays the number it was.
	createRollup(step: RollupStep) {
		this.sql.exec(`CREATE TABLE IF NOT EXISTS ${rollupTable(step)} (
			bucket REAL NOT NULL, twin TEXT NOT NULL, dims TEXT NOT NULL, measurement TEXT NOT NULL,
			count INTEGER NOT NULL, sum REAL, min, max,
			first TEXT, first_ts REAL, first_seq INTEGER, first_entry TEXT,
			last TEXT, last_ts REAL, last_seq INTEGER, last_entry TEXT,
			PRIMARY KEY (bucket, twin, dims, measurement)) WITHOUT ROWID`);
	}

	// Drops a tier's table whole (no row scan) and forgets it.
	drop(tier: string) {
		this.sql.exec(`DROP TABLE IF EXISTS ${tier === RAW_TABLE ? RAW_TABLE : rollupTable(tier as RollupStep)}`);
		this.sql.exec("DELETE FROM tiers WHERE tier = ?", tier);
	}

	hasRaw(): boolean {
		return this.sql.exec("SELECT 1 FROM raw LIMIT 1").toArray().length > 0;
	}

	has(point: Point): boolean {
		return this.sql.exec("SELECT 1 FROM raw WHERE seq = ? AND entry = ?", point.seq, point.entry).toArray().length > 0;
	}

	insertRaw(point: Point) {
		this.sql.exec(
			`INSERT INTO raw (${RAW_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			point.ts,
			point.seq,
			point.entry,
			point.twin,
			JSON.stringify(point.dims),
			point.measurement,
			JSON.stringify(point.value),
		);
	}

	// Folds one point into its bucket's row of a tier. Every SET expression reads the row as it
	// was, so first/last compare against the old keys. A null value still makes the row (count 0):
	// a bucket with points shows in a query even when none of them had a value.
	fold(step: RollupStep, point: Point, type: MeasurementType | undefined) {
		const size = ROLLUP_STEPS[step];
		const bucket = Math.floor(point.ts / size) * size;
		const value = point.value;
		const present = value !== null;
		const numeric = typeof value === "number";
		const summed = numeric && (type === "integer" || type === "float") ? value : null;
		const ranged = numeric && (type === "integer" || type === "float" || type === "timestamp") ? value : null;
		const text = present ? JSON.stringify(value) : null;
		const ts = present ? point.ts : null;
		const seq = present ? point.seq : null;
		const entry = present ? point.entry : null;
		this.sql.exec(
			`INSERT INTO ${rollupTable(step)} (bucket, twin, dims, measurement, count, sum, min, max,
				first, first_ts, first_seq, first_entry, last, last_ts, last_seq, last_entry)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (bucket, twin, dims, measurement) DO UPDATE SET
				count = count + excluded.count,
				sum = CASE WHEN excluded.sum IS NULL THEN sum WHEN sum IS NULL THEN excluded.sum ELSE sum + excluded.sum END,
				min = CASE WHEN excluded.min IS NOT NULL AND (min IS NULL OR excluded.min < min) THEN excluded.min ELSE min END,
				max = CASE WHEN excluded.max IS NOT NULL AND (max IS NULL OR excluded.max > max) THEN excluded.max ELSE max END,
				${firstLast("first", "<")},
				${firstLast("last", ">")}`,
			bucket,
			point.twin,
			JSON.stringify(point.dims),
			point.measurement,
			present ? 1 : 0,
			summed,
			ranged,
			ranged,
			text,
			ts,
			seq,
			entry,
			text,
			ts,
			seq,
			entry,
		);
	}

	// Raw points in key order strictly after `after`, for a building tier's walk.
	walk(after: RawPosition | null, limit: number): Point[] {
		const rows = after
			? this.sql.exec<RawRow>(
					`SELECT ${RAW_COLUMNS} FROM raw WHERE (ts, seq, entry) > (?, ?, ?) ORDER BY ts, seq, entry LIMIT ?`,
					after.ts,
					after.seq,
					after.entry,
					limit,
				)
			: this.sql.exec<RawRow>(`SELECT ${RAW_COLUMNS} FROM raw ORDER BY ts, seq, entry LIMIT ?`, limit);
		return [...rows].map(pointOf);
	}

	// Pages start at a row value, not at the range's bound plus a filter: a page after many points
	// of one ts (a write's entries share it) then seeks straight to its first row.
	readRaw(ge: number, le: number, after: RawPosition | null, desc: boolean, limit: number): Point[] {
		const from = after && (desc ? after.ts <= le : after.ts >= ge) ? [after.ts, after.seq, after.entry] : null;
		const [cmp, bound, dir] = desc ? ["<", "<=", "DESC"] : [">", ">=", "ASC"];
		const near = from ? `(ts, seq, entry) ${cmp} (?, ?, ?)` : `ts ${bound} ?`;
		const far = desc ? "ts >= ?" : "ts <= ?";
		const rows = this.sql.exec<RawRow>(
			`SELECT ${RAW_COLUMNS} FROM raw WHERE ${near} AND ${far}
			ORDER BY ts ${dir}, seq ${dir}, entry ${dir} LIMIT ?`,
			...(from ?? [desc ? le : ge]),
			desc ? ge : le,
			limit,
		);
		return [...rows].map(pointOf);
	}

	readRollup(
		step: RollupStep,
		ge: number,
		le: number,
		after: RollupPosition | null,
		desc: boolean,
		limit: number,
	): RollupRow[] {
		const size = ROLLUP_STEPS[step];
		const lo = Math.floor(ge / size) * size;
		const from =
			after && (desc ? after.bucket <= le : after.bucket >= lo)
				? [after.bucket, after.twin, after.dims, after.measurement]
				: null;
		const [cmp, bound, dir] = desc ? ["<", "<=", "DESC"] : [">", ">=", "ASC"];
		const near = from ? `(bucket, twin, dims, measurement) ${cmp} (?, ?, ?, ?)` : `bucket ${bound} ?`;
		const far = desc ? "bucket >= ?" : "bucket <= ?";
		const rows = this.sql.exec<StoredRollup>(
			`SELECT ${ROLLUP_COLUMNS} FROM ${rollupTable(step)} WHERE ${near} AND ${far}
			ORDER BY bucket ${dir}, twin ${dir}, dims ${dir}, measurement ${dir} LIMIT ?`,
			...(from ?? [desc ? le : lo]),
			desc ? lo : le,
			limit,
		);
		return [...rows].map((r) => ({
			...r,
			dims: JSON.parse(r.dims) as Json[],
			first: r.first === null ? null : (JSON.parse(r.first) as Json),
			last: r.last === null ? null : (JSON.parse(r.last) as Json),
		}));
	}
}

// Replaces first/last (value and key) when the incoming point's key is earlier/later. Ties of
// ts go to seq, then entry, as row values compare.
function firstLast(name: "first" | "last", cmp: "<" | ">") {
	const key = `(${name}_ts, ${name}_seq, ${name}_entry)`;
	const incoming = `(excluded.${name}_ts, excluded.${name}_seq, excluded.${name}_entry)`;
	const wins = `excluded.${name}_ts IS NOT NULL AND (${name}_ts IS NULL OR ${incoming} ${cmp} ${key})`;
	return ["", "_ts", "_seq", "_entry"]
		.map((column) => `${name}${column} = CASE WHEN ${wins} THEN excluded.${name}${column} ELSE ${name}${column} END`)
		.join(",\n\t\t\t\t");
}

const pointOf = (r: RawRow): Point => ({
	seq: r.seq,
	entry: r.entry,
	ts: r.ts,
	twin: r.twin,
	dims: JSON.parse(r.dims) as Json[],
	measurement: r.measurement,
	value: JSON.parse(r.value) as Json,
});

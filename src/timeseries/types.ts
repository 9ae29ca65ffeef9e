import type { Json } from "../base/json";

// The shapes the parts of Timeseries tables share (docs/timeseries.md): the account's object
// computes points in a ledger write and delivers them; a chunk object (TimeseriesDO, one per
// table, generation and chunk) stores them with their rollups; a query reads a chunk's rows a
// page at a time and aggregates them.

// Rollup steps, in seconds, ascending.
export const ROLLUP_STEPS = { "1m": 60, "5m": 300, "15m": 900, "1h": 3600, "6h": 21_600, "1d": 86_400 } as const;
export type RollupStep = keyof typeof ROLLUP_STEPS;
export type Tier = "raw" | RollupStep;

// A measurement's type: the five of Indexes tables (rules/index-values.ts) and json.
export type MeasurementType = "string" | "integer" | "float" | "boolean" | "timestamp" | "json";

// One point as the account's object delivers it. (seq, entry) is its key within its table: a
// redelivery of the same key changes nothing. `ts` is `_timestamp` in seconds (milliseconds
// precision); `dims` the dimension values in declared order; `value` the entry's new value
// coerced to the measurement's type (null when it does not fit).
export type Point = {
	seq: number;
	entry: string;
	ts: number;
	twin: string;
	dims: Json[];
	measurement: string;
	value: Json;
};

// What a chunk object is told with every call that writes: which table, generation and chunk it
// holds ([start, end) in seconds), the measurement types, the tiers and retentions (seconds,
// null for INF), and the most bytes it may hold.
export type ChunkSpec = {
	account: string;
	table: string;
	generation: number;
	start: number;
	end: number;
	measurements: Record<string, MeasurementType>;
	retention: number | null;
	tiers: { step: RollupStep; retention: number | null }[];
	maxBytes: number;
};

// A rollup row: per (bucket, twin, dims, measurement), over the non-null values of the points.
// `first`/`last` are the values at the earliest/latest `_timestamp` (ties by seq, then entry).
export type RollupRow = {
	bucket: number;
	twin: string;
	dims: Json[];
	measurement: string;
	count: number;
	sum: number | null;
	min: Json;
	max: Json;
	first: Json;
	first_ts: number | null;
	first_seq: number | null;
	last: Json;
	last_ts: number | null;
	last_seq: number | null;
};

// Where a page of one tier stopped: a raw point's (ts, seq, entry), or a rollup row's
// (bucket, twin, dims as JSON text, measurement).
export type RawPosition = { ts: number; seq: number; entry: string };
export type RollupPosition = { bucket: number; twin: string; dims: string; measurement: string };

import type { TimeseriesTableRow } from "../db/timeseries";
import { canonicalType } from "../rules/index-values";
import { measurementType, periodSeconds } from "../rules/timeseries-definition";
import type { PointTable } from "../rules/timeseries-points";
import { type ChunkSpec, type MeasurementType, ROLLUP_STEPS, type RollupStep } from "./types";

// Where a table's points live (docs/timeseries.md, "Storage and consistency"): the chunk object of (table,
// generation, chunk start), chunk k holding k·C ≤ `_timestamp` < (k+1)·C.

export function chunkSeconds(row: Pick<TimeseriesTableRow, "chunk">): number {
	return periodSeconds(row.chunk) ?? 7 * 86_400;
}

export function chunkStart(row: Pick<TimeseriesTableRow, "chunk">, ts: number): number {
	const length = chunkSeconds(row);
	return Math.floor(ts / length) * length;
}

// The types a point is made with: each type name as its canonical one (an unknown one, which a
// checked definition never holds, as text or JSON).
export function pointTable(row: TimeseriesTableRow): PointTable {
	return {
		dimensions: {
			names: row.dimensions.names,
			types: row.dimensions.types.map((type) => {
				const canonical = canonicalType(type);
				return canonical === undefined || canonical === "unsupported" ? "string" : canonical;
			}),
		},
		measurements: { names: row.measurements.names, types: measurementTypes(row) },
		defaults: row.defaults,
		retention: periodSeconds(row.retention),
	};
}

function measurementTypes(row: TimeseriesTableRow): MeasurementType[] {
	return row.measurements.types.map((name) => {
		const type = measurementType(name);
		return type === undefined || type === "unsupported" ? "json" : type;
	});
}

// A measurement's name in the chunk objects (see `keys` in db/schema.ts).
export function measurementKey(row: Pick<TimeseriesTableRow, "keys">, name: string): string {
	return Object.hasOwn(row.keys, name) ? row.keys[name]! : name;
}

// What a chunk object is told with each write: its range, the measurement types, the tiers and
// their retentions (the ready ones and those being filled), and its byte limit.
export function chunkSpec(row: TimeseriesTableRow, start: number, maxBytes: number): ChunkSpec {
	const types = measurementTypes(row);
	const measurements: Record<string, MeasurementType> = {};
	row.measurements.names.forEach((name, i) => {
		measurements[measurementKey(row, name)] = types[i] ?? "json";
	});
	return {
		account: row.account,
		table: row.uuid,
		generation: row.generation,
		start,
		end: start + chunkSeconds(row),
		measurements,
		retention: periodSeconds(row.retention),
		tiers: row.rollups
			.filter((tier) => tier.step in ROLLUP_STEPS)
			.map((tier) => ({ step: tier.step as RollupStep, retention: periodSeconds(tier.retention) })),
		maxBytes,
	};
}

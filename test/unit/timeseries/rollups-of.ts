import type { Json } from "../../../src/base/json";
import type { MeasurementType, Point, RollupRow } from "../../../src/timeseries/types";

// Rollup rows as a chunk object would keep them, built here from raw points the plain way, so
// that the aggregation of both can be compared.
export function rollupsOf(points: Point[], step: number, types: Record<string, MeasurementType>): RollupRow[] {
	const rows = new Map<string, RollupRow>();
	const before = (a: Point, b: Point) =>
		a.ts !== b.ts ? a.ts < b.ts : a.seq !== b.seq ? a.seq < b.seq : a.entry < b.entry;
	const firsts = new Map<string, Point>();
	const lasts = new Map<string, Point>();
	for (const point of points) {
		const bucket = Math.floor(point.ts / step) * step;
		const key = JSON.stringify([bucket, point.twin, point.dims, point.measurement]);
		let row = rows.get(key);
		if (!row) {
			row = {
				bucket,
				twin: point.twin,
				dims: point.dims,
				measurement: point.measurement,
				count: 0,
				sum: null,
				min: null,
				max: null,
				first: null,
				first_ts: null,
				first_seq: null,
				last: null,
				last_ts: null,
				last_seq: null,
			};
			rows.set(key, row);
		}
		const value: Json = point.value;
		if (value === null) continue;
		row.count++;
		const type = types[point.measurement];
		if (typeof value === "number" && (type === "integer" || type === "float")) row.sum = (row.sum ?? 0) + value;
		if (typeof value === "number" && type !== "json") {
			if (row.min === null || value < (row.min as number)) row.min = value;
			if (row.max === null || value > (row.max as number)) row.max = value;
		}
		const first = firsts.get(key);
		if (!first || before(point, first)) {
			firsts.set(key, point);
			Object.assign(row, { first: value, first_ts: point.ts, first_seq: point.seq });
		}
		const last = lasts.get(key);
		if (!last || before(last, point)) {
			lasts.set(key, point);
			Object.assign(row, { last: value, last_ts: point.ts, last_seq: point.seq });
		}
	}
	return [...rows.values()];
}

import { sibling } from "../base/shards";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import type { Database } from "../db/client";
import { runBatch } from "../db/ledgers";
import { Catalog } from "./catalog";
import * as db_ from "../db/timeseries";
import type { TimeseriesDefinition, TimeseriesTableRow } from "../db/timeseries";
import { checkTimeseriesDefinition, sortedRollups } from "../rules/timeseries-definition";
import { measurementKey } from "../timeseries/spec";

// An account's Timeseries tables (docs/timeseries.md): definitions, written by the account's
// object one at a time with the ledger writes that feed them. Points live in chunk objects
// (timeseries/); the writes that make them are in timeseries-feed.ts.

export type TimeseriesLimits = { tables: number; chunkBytes: number };

// A definition as a create gives it: the optional members may be absent.
export type TimeseriesInput = Pick<TimeseriesDefinition, "dimensions" | "measurements"> &
	Partial<Omit<TimeseriesDefinition, "dimensions" | "measurements">>;

export type TimeseriesChanges = Partial<
	Pick<TimeseriesDefinition, "defaults" | "retention" | "chunk" | "measurements" | "rollups">
>;

// The account's tables as D1 holds them (catalog.ts).
export class TimeseriesCatalog extends Catalog<TimeseriesTableRow, TimeseriesTableRow> {
	constructor(load: () => Database) {
		super(
			(account) => db_.listTimeseriesTables(load(), account),
			(row) => row,
		);
	}
}

// The record the API answers, keys in the contract's order.
export function timeseriesRecord(row: TimeseriesTableRow) {
	return {
		stats: { rows: row.rows, table_size: row.table_size },
		dimensions: row.dimensions,
		measurements: row.measurements,
		defaults: row.defaults,
		retention: row.retention,
		chunk: row.chunk,
		rollups: row.rollups,
		status: row.status,
		created_ts: row.created_ts,
		updated_ts: row.updated_ts,
	};
}

export async function createTables(
	db: Database,
	catalog: TimeseriesCatalog,
	caller: Caller,
	input: Record<string, TimeseriesInput>,
	limits: TimeseriesLimits,
	at: number,
) {
	const tables = await catalog.all(caller.account);
	const names = new Set(tables.map((table) => table.name));
	const answers: Record<string, ReturnType<typeof timeseriesRecord> | { error: string }> = {};
	const created: TimeseriesTableRow[] = [];
	for (const [name, definition] of Object.entries(input)) {
		if (names.has(name)) {
			answers[name] = { error: "Table already exists." };
			continue;
		}
		if (tables.length + created.length >= limits.tables) {
			answers[name] = { error: "Table limit reached." };
			continue;
		}
		// A new table is empty and ready: it is never filled from past values.
		const row: TimeseriesTableRow = {
			uuid: sibling(caller.account),
			account: caller.account,
			name,
			dimensions: definition.dimensions,
			measurements: definition.measurements,
			defaults: definition.defaults ?? null,
			retention: definition.retention ?? "INF",
			chunk: definition.chunk ?? "1W",
			rollups: sortedRollups(definition.rollups ?? []),
			building: [],
			keys: {},
			generation: 1,
			status: "ready",
			rows: 0,
			table_size: 0,
			created_ts: at,
			updated_ts: at,
		};
		created.push(row);
		names.add(name);
		answers[name] = timeseriesRecord(row);
	}
	await runBatch(
		db,
		created.map((row) => db_.insertTimeseriesTable(db, row)),
	);
	for (const row of created) catalog.put(row);
	return { uuid: caller.account, timeseries: answers };
}

// Read from D1, not the catalog: a record answers the counts the ledger writes have made.
async function ownTable(db: Database, caller: Caller, name: string): Promise<TimeseriesTableRow> {
	const row = await db_.findTimeseriesTable(db, caller.account, name);
	if (!row) throw new ApiError("not_found", { description: "No such timeseries table" });
	return row;
}

function refuse(path: string, message: string): never {
	throw new ApiError("validation", { description: `${path}: ${message}`, details: [{ path, message }] });
}

// Given members replace the stored ones; the result must hold as a definition. `chunk` is the
// shard key and cannot change; a kept measurement keeps its type (its points stay); a removed
// rollup tier goes at once; an added one is filled from the retained raw points in the
// background (`building`, not read until done). The same definition changes nothing.
export async function updateTable(
	db: Database,
	catalog: TimeseriesCatalog,
	caller: Caller,
	name: string,
	changes: TimeseriesChanges,
	at: number,
) {
	const row = await ownTable(db, caller, name);
	if (changes.chunk !== undefined && changes.chunk !== row.chunk)
		refuse("chunk", `The chunk is the table's shard key: only ${row.chunk}`);
	if (changes.measurements) {
		const { names, types } = changes.measurements;
		names.forEach((measurement, i) => {
			const kept = row.measurements.names.indexOf(measurement);
			if (kept >= 0 && row.measurements.types[kept].toLowerCase() !== types[i]?.toLowerCase())
				refuse(`measurements.types.${i}`, `A kept measurement keeps its type (${row.measurements.types[kept]})`);
		});
	}
	const merged: TimeseriesDefinition = {
		dimensions: row.dimensions,
		measurements: changes.measurements ?? row.measurements,
		defaults: changes.defaults === undefined ? row.defaults : changes.defaults,
		retention: changes.retention ?? row.retention,
		chunk: row.chunk,
		rollups: changes.rollups === undefined ? row.rollups : sortedRollups(changes.rollups),
	};
	const details = checkTimeseriesDefinition(merged);
	if (details.length)
		throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
	if (definitionKey(merged) === definitionKey(row)) return { uuid: row.uuid, ...timeseriesRecord(row), fill: false };
	const steps = new Set(row.rollups.map((tier) => tier.step));
	const kept = new Set(merged.rollups.map((tier) => tier.step));
	const building = [
		...row.building.filter((step) => kept.has(step)),
		...merged.rollups.filter((tier) => !steps.has(tier.step)).map((tier) => tier.step),
	];
	// A measurement the update adds gets a key of its own: points of one of that name removed
	// before are never its.
	const keys = Object.fromEntries(
		merged.measurements.names.map((measurement) => [
			measurement,
			row.measurements.names.includes(measurement)
				? measurementKey(row, measurement)
				: `${measurement}@${Math.round(at * 1000)}`,
		]),
	);
	const updated: TimeseriesTableRow = {
		...row,
		...merged,
		keys,
		building,
		status: row.status === "full" ? "full" : building.length ? "building" : "ready",
		updated_ts: at,
	};
	await db_.setTimeseriesTable(db, row.uuid, updated);
	catalog.put(updated);
	return { uuid: row.uuid, ...timeseriesRecord(updated), fill: building.length > 0 };
}

function definitionKey(definition: TimeseriesDefinition): string {
	const { measurements, defaults, retention, chunk, rollups } = definition;
	return JSON.stringify([measurements, defaults, retention, chunk, rollups]);
}

// A new, empty generation: the old points are invisible at once, their objects emptied in the
// background; a fill stops.
export async function truncateTable(
	db: Database,
	catalog: TimeseriesCatalog,
	caller: Caller,
	name: string,
	at: number,
) {
	const row = await ownTable(db, caller, name);
	const updated: TimeseriesTableRow = {
		...row,
		generation: row.generation + 1,
		building: [],
		// A new generation's chunks hold no point of any earlier measurement.
		keys: {},
		status: "ready",
		rows: 0,
		table_size: 0,
		updated_ts: at,
	};
	await db_.setTimeseriesTable(db, row.uuid, updated);
	catalog.put(updated);
	return { uuid: row.uuid, ...timeseriesRecord(updated) };
}

export async function deleteTable(db: Database, catalog: TimeseriesCatalog, caller: Caller, name: string) {
	const row = await ownTable(db, caller, name);
	await db_.removeTimeseriesTable(db, row.uuid);
	catalog.remove(row.uuid);
	return { uuid: row.uuid, ...timeseriesRecord(row) };
}

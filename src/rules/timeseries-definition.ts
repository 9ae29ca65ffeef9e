import type { ErrorDetail } from "../base/errors";
import { type Canonical, canonicalType } from "./index-values";
import { parseTemplate } from "./templates";

// What a Timeseries table's definition and an entry's `timeseries` property may say
// (docs/timeseries.md). The JSON shape (members, their JSON types) is the schema's; these are
// the checks beyond it, pure so that the Worker refuses a create before anything is written
// and the account's object checks an update, and an entry write, the same way.

export const TIMESERIES_NAME = /^[a-z_][0-9a-z_]{0,63}$/;
export const MAX_DIMENSIONS = 8;
export const MAX_MEASUREMENTS = 32;
export const MAX_ROLLUPS = 3;
export const MAX_ENTRY_TABLES = 10;
// The answer's own columns: a dimension or measurement of these names would shadow them.
export const RESERVED_NAMES: readonly string[] = ["twin", "_timestamp"];

export const RETENTION = /^([1-9][0-9]{0,2}[DWMY]|INF)$/;
export const CHUNK = /^[1-9][0-9]{0,2}[DWMY]$/;
const DAY = 86_400;
const UNIT_SECONDS: Record<string, number> = { D: DAY, W: 7 * DAY, M: 30 * DAY, Y: 365 * DAY };
const MIN_CHUNK = DAY;
const MAX_CHUNK = 365 * DAY;

// Ascending, as the answer lists rollups; the same steps as ROLLUP_STEPS in timeseries/types.ts
// (rules/ may not import it; a unit test holds them equal).
export const ROLLUP_STEP_SECONDS: Readonly<Record<string, number>> = {
	"1m": 60,
	"5m": 300,
	"15m": 900,
	"1h": 3600,
	"6h": 21_600,
	"1d": 86_400,
};

// The measurement types: those of Indexes tables and any JSON.
export type MeasurementTypeName = Canonical | "json";

// The templates a table's `defaults` or an entry's property give for one table.
export type TimeseriesTemplates = { measurement?: string; dimensions?: Record<string, string>; timestamp?: string };

export type TimeseriesDefinition = {
	dimensions: { names: string[]; types: string[] };
	measurements: { names: string[]; types: string[] };
	defaults?: TimeseriesTemplates | null;
	retention?: string;
	chunk?: string;
	rollups?: { step: string; retention: string }[];
	database?: string | null;
};

// Seconds of a retention or chunk (`3W`), null for INF. Only for a text the patterns took: any
// other is a caller's mistake, thrown.
export function periodSeconds(text: string): number | null {
	if (text === "INF") return null;
	if (!CHUNK.test(text)) throw new Error(`not a period: ${text}`);
	return Number(text.slice(0, -1)) * UNIT_SECONDS[text.slice(-1)];
}

// A measurement's type (any case, aliases as Indexes tables, json and jsonb as json),
// "unsupported" for the original's other types, undefined for a name neither knows.
export function measurementType(name: string): MeasurementTypeName | "unsupported" | undefined {
	const lower = name.toLowerCase();
	if (lower === "json" || lower === "jsonb") return "json";
	return canonicalType(lower);
}

// A copy in ascending step, as the definition is answered.
export function sortedRollups<T extends { step: string }>(rollups: readonly T[]): T[] {
	return [...rollups].sort((a, b) => (ROLLUP_STEP_SECONDS[a.step] ?? 0) - (ROLLUP_STEP_SECONDS[b.step] ?? 0));
}

// One detail per problem, paths relative to the definition (`measurements.names.2`, `chunk`,
// `rollups.1.step`, `defaults.dimensions.site`); none when the definition holds.
export function checkTimeseriesDefinition(definition: TimeseriesDefinition): ErrorDetail[] {
	const details: ErrorDetail[] = [];
	const seen = new Set<string>();
	const columns = (member: "dimensions" | "measurements", min: number, max: number) => {
		const { names, types } = definition[member];
		if (names.length < min || names.length > max)
			details.push({ path: `${member}.names`, message: `Must hold ${min} to ${max} names` });
		if (types.length !== names.length)
			details.push({ path: `${member}.types`, message: "Must hold one type per name" });
		names.forEach((name, i) => {
			const path = `${member}.names.${i}`;
			if (!TIMESERIES_NAME.test(name)) details.push({ path, message: `Must match ${TIMESERIES_NAME.source}` });
			else if (RESERVED_NAMES.includes(name)) details.push({ path, message: `'${name}' is a column of the answer` });
			else if (seen.has(name))
				details.push({ path, message: "Names must be unique across dimensions and measurements" });
			seen.add(name);
		});
		types.forEach((type, i) => {
			const message = typeMessage(type, member === "measurements");
			if (message) details.push({ path: `${member}.types.${i}`, message });
		});
	};
	columns("dimensions", 0, MAX_DIMENSIONS);
	columns("measurements", 1, MAX_MEASUREMENTS);
	const retention = definition.retention ?? "INF";
	if (!RETENTION.test(retention)) details.push({ path: "retention", message: `Must match ${RETENTION.source}` });
	details.push(...checkChunk(definition.chunk ?? "1W"));
	details.push(...checkRollups(definition.rollups ?? []));
	if (definition.defaults)
		details.push(...checkTemplates(definition.defaults, definition.dimensions.names, "defaults"));
	if (definition.database !== undefined && definition.database !== null && definition.database !== "default")
		details.push({ path: "database", message: "Only the default database: absent, null or 'default'" });
	return details;
}

function typeMessage(type: string, measurement: boolean): string | undefined {
	const known = measurement
		? "string, integer, float, boolean, timestamp or json"
		: "string, integer, float, boolean or timestamp";
	const canonical = measurement ? measurementType(type) : canonicalType(type);
	if (canonical === "unsupported") return `'${type}' is not supported: use ${known}`;
	if (canonical === undefined) return `Unknown type '${type}': use ${known}`;
	return undefined;
}

function checkChunk(chunk: string): ErrorDetail[] {
	if (!CHUNK.test(chunk)) return [{ path: "chunk", message: `Must match ${CHUNK.source}` }];
	const seconds = periodSeconds(chunk) ?? 0;
	if (seconds < MIN_CHUNK || seconds > MAX_CHUNK) return [{ path: "chunk", message: "Must be from 1D to 1Y" }];
	return [];
}

function checkRollups(rollups: { step: string; retention: string }[]): ErrorDetail[] {
	const details: ErrorDetail[] = [];
	if (rollups.length > MAX_ROLLUPS)
		details.push({ path: "rollups", message: `Must hold at most ${MAX_ROLLUPS} rollups` });
	const steps = new Set<string>();
	rollups.forEach(({ step, retention }, i) => {
		if (!Object.hasOwn(ROLLUP_STEP_SECONDS, step))
			details.push({
				path: `rollups.${i}.step`,
				message: `Must be one of ${Object.keys(ROLLUP_STEP_SECONDS).join(", ")}`,
			});
		else if (steps.has(step)) details.push({ path: `rollups.${i}.step`, message: "Steps must be distinct" });
		steps.add(step);
		if (!RETENTION.test(retention))
			details.push({ path: `rollups.${i}.retention`, message: `Must match ${RETENTION.source}` });
	});
	return details;
}

// The templates of `defaults` or of one table of an entry's property: each parses with the
// entry's fields allowed, and names only declared dimensions.
export function checkTemplates(templates: TimeseriesTemplates, dimensions: string[], at: string): ErrorDetail[] {
	const details: ErrorDetail[] = [];
	const prefix = at ? `${at}.` : "";
	const check = (path: string, text: string) => {
		const parsed = parseTemplate(text, { entryFields: true });
		if (!parsed.ok) details.push({ path, message: `${parsed.message} at position ${parsed.position}` });
	};
	if (templates.measurement !== undefined) check(`${prefix}measurement`, templates.measurement);
	if (templates.timestamp !== undefined) check(`${prefix}timestamp`, templates.timestamp);
	for (const [name, text] of Object.entries(templates.dimensions ?? {})) {
		const path = `${prefix}dimensions.${name}`;
		if (!dimensions.includes(name)) details.push({ path, message: "The table declares no dimension of this name" });
		else check(path, text);
	}
	return details;
}

// An entry's `timeseries` property: null, or 1 to MAX_ENTRY_TABLES tables of the writer's
// account that exist (`tables` answers their dimensions, undefined for none), each with only
// `measurement`, `dimensions` and `timestamp`, valid templates and declared dimensions. Paths
// are relative to the property (`site_temps.dimensions.zone`); "" is the property itself. The
// shape is checked here too: the property is checked where the entry is written, whatever the
// schema in front of it took.
export function checkEntryTimeseries(
	value: unknown,
	tables: (name: string) => { dimensions: string[] } | undefined,
): ErrorDetail[] {
	if (value === null) return [];
	if (!isObject(value)) return [{ path: "", message: "Must be null or an object of Timeseries tables" }];
	const names = Object.keys(value);
	if (names.length < 1 || names.length > MAX_ENTRY_TABLES)
		return [{ path: "", message: `Must name 1 to ${MAX_ENTRY_TABLES} Timeseries tables` }];
	const details: ErrorDetail[] = [];
	for (const name of names) {
		const table = tables(name);
		if (!table) {
			details.push({ path: name, message: "No Timeseries table of this name" });
			continue;
		}
		const templates = value[name];
		if (!isObject(templates)) {
			details.push({ path: name, message: "Must be an object of measurement, dimensions and timestamp" });
			continue;
		}
		const shape = shapeDetails(templates, name);
		details.push(...(shape.length ? shape : checkTemplates(templates as TimeseriesTemplates, table.dimensions, name)));
	}
	return details;
}

function isObject(value: unknown): value is Record<string, unknown> {
	return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shapeDetails(templates: Record<string, unknown>, at: string): ErrorDetail[] {
	const details: ErrorDetail[] = [];
	for (const [member, text] of Object.entries(templates)) {
		const path = `${at}.${member}`;
		if (member === "measurement" || member === "timestamp") {
			if (typeof text !== "string") details.push({ path, message: "Must be a template (a string)" });
		} else if (member === "dimensions") {
			if (!isObject(text)) details.push({ path, message: "Must be an object of templates by dimension" });
			else
				for (const [dimension, template] of Object.entries(text))
					if (typeof template !== "string")
						details.push({ path: `${path}.${dimension}`, message: "Must be a template (a string)" });
		} else details.push({ path, message: "Unknown member: use measurement, dimensions or timestamp" });
	}
	return details;
}

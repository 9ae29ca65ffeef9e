import { describe, expect, it } from "vitest";
import {
	ROLLUP_STEP_SECONDS,
	checkEntryTimeseries,
	checkTimeseriesDefinition,
	measurementType,
	periodSeconds,
	sortedRollups,
	TIMESERIES_NAME,
	type TimeseriesDefinition,
} from "../../../src/rules/timeseries-definition";
import { ROLLUP_STEPS } from "../../../src/timeseries/types";

const DAY = 86_400;

function definition(patch: Partial<TimeseriesDefinition> = {}): TimeseriesDefinition {
	return {
		dimensions: { names: ["site", "zone"], types: ["string", "int"] },
		measurements: { names: ["temp", "raw"], types: ["double precision", "jsonb"] },
		...patch,
	};
}

function paths(patch: Partial<TimeseriesDefinition>): string[] {
	return checkTimeseriesDefinition(definition(patch)).map((detail) => detail.path);
}

describe("periodSeconds, measurementType, sortedRollups", () => {
	it("counts D, W, M, Y as 1, 7, 30 and 365 days, INF as null", () => {
		expect(periodSeconds("1D")).toBe(DAY);
		expect(periodSeconds("2W")).toBe(14 * DAY);
		expect(periodSeconds("3M")).toBe(90 * DAY);
		expect(periodSeconds("1Y")).toBe(365 * DAY);
		expect(periodSeconds("999D")).toBe(999 * DAY);
		expect(periodSeconds("INF")).toBeNull();
		expect(() => periodSeconds("0D")).toThrow();
	});

	it("takes the Indexes types and aliases, and json or jsonb", () => {
		expect(measurementType("BIGINT")).toBe("integer");
		expect(measurementType("double precision")).toBe("float");
		expect(measurementType("json")).toBe("json");
		expect(measurementType("JSONB")).toBe("json");
		expect(measurementType("uuid")).toBe("unsupported");
		expect(measurementType("blob")).toBeUndefined();
	});

	it("knows the rollup steps timeseries/types.ts names", () => {
		expect(ROLLUP_STEP_SECONDS).toEqual(ROLLUP_STEPS);
		expect(Object.keys(ROLLUP_STEP_SECONDS)).toEqual(Object.keys(ROLLUP_STEPS));
	});

	it("sorts rollups by ascending step", () => {
		const rollups = [
			{ step: "1d", retention: "INF" },
			{ step: "1m", retention: "1W" },
			{ step: "15m", retention: "1M" },
		];
		expect(sortedRollups(rollups).map((r) => r.step)).toEqual(["1m", "15m", "1d"]);
		expect(rollups[0].step).toBe("1d");
	});

	it("names tables, dimensions and measurements alike", () => {
		expect(TIMESERIES_NAME.test("site_temps")).toBe(true);
		expect(TIMESERIES_NAME.test("Site")).toBe(false);
		expect(TIMESERIES_NAME.test(`a${"b".repeat(63)}`)).toBe(true);
		expect(TIMESERIES_NAME.test(`a${"b".repeat(64)}`)).toBe(false);
	});
});

describe("checkTimeseriesDefinition", () => {
	it("takes a full definition, and one with every default", () => {
		expect(checkTimeseriesDefinition(definition())).toEqual([]);
		const full = definition({
			defaults: {
				measurement: "{entry_name}",
				dimensions: { site: "{LEDGER[site]}", zone: "{entry_value[zone]}" },
				timestamp: "{value_changed_ts}",
			},
			retention: "2Y",
			chunk: "1Y",
			rollups: [
				{ step: "1h", retention: "INF" },
				{ step: "1m", retention: "999Y" },
				{ step: "1d", retention: "1D" },
			],
			database: "default",
		});
		expect(checkTimeseriesDefinition(full)).toEqual([]);
		expect(checkTimeseriesDefinition(definition({ defaults: null, database: null, rollups: [] }))).toEqual([]);
		expect(checkTimeseriesDefinition({ ...definition(), dimensions: { names: [], types: [] } })).toEqual([]);
	});

	it("counts dimensions (0 to 8) and measurements (1 to 32), a type per name", () => {
		const nine = Array.from({ length: 9 }, (_, i) => `d${i}`);
		expect(paths({ dimensions: { names: nine, types: nine.map(() => "string") } })).toEqual(["dimensions.names"]);
		expect(paths({ measurements: { names: [], types: [] } })).toEqual(["measurements.names"]);
		const many = Array.from({ length: 33 }, (_, i) => `m${i}`);
		expect(paths({ measurements: { names: many, types: many.map(() => "float") } })).toEqual(["measurements.names"]);
		expect(paths({ measurements: { names: ["a", "b"], types: ["float"] } })).toEqual(["measurements.types"]);
		expect(paths({ dimensions: { names: ["a"], types: ["float", "float"] } })).toEqual(["dimensions.types"]);
	});

	it("refuses bad, reserved and repeated names at their index", () => {
		expect(paths({ dimensions: { names: ["Site"], types: ["string"] } })).toEqual(["dimensions.names.0"]);
		expect(paths({ measurements: { names: ["ok", "twin"], types: ["float", "float"] } })).toEqual([
			"measurements.names.1",
		]);
		expect(paths({ dimensions: { names: ["_timestamp"], types: ["string"] } })).toEqual(["dimensions.names.0"]);
		const across = checkTimeseriesDefinition(
			definition({ measurements: { names: ["temp", "site", "temp"], types: ["float", "float", "float"] } }),
		);
		expect(across.map((d) => d.path)).toEqual(["measurements.names.1", "measurements.names.2"]);
		expect(across[0].message).toMatch(/unique across dimensions and measurements/);
	});

	it("refuses types: json only for measurements, the original's others as not supported", () => {
		const dims = checkTimeseriesDefinition(definition({ dimensions: { names: ["a", "b"], types: ["json", "blob"] } }));
		expect(dims).toEqual([
			{
				path: "dimensions.types.0",
				message: "'json' is not supported: use string, integer, float, boolean or timestamp",
			},
			{ path: "dimensions.types.1", message: "Unknown type 'blob': use string, integer, float, boolean or timestamp" },
		]);
		const measurements = checkTimeseriesDefinition(
			definition({ measurements: { names: ["a", "b"], types: ["uuid", "text"] } }),
		);
		expect(measurements).toEqual([
			{
				path: "measurements.types.0",
				message: "'uuid' is not supported: use string, integer, float, boolean, timestamp or json",
			},
		]);
	});

	it("refuses a retention or chunk off their patterns, and a chunk outside 1D..1Y", () => {
		for (const retention of ["0D", "1000D", "1d", "inf", "1H", ""]) expect(paths({ retention })).toEqual(["retention"]);
		for (const chunk of ["INF", "0W", "53W", "13M", "2Y", "366D", "1000D"]) expect(paths({ chunk })).toEqual(["chunk"]);
		for (const chunk of ["1D", "52W", "12M", "1Y", "365D"]) expect(paths({ chunk })).toEqual([]);
	});

	it("refuses more than 3 rollups, unknown or repeated steps and bad retentions", () => {
		const rollup = (step: string, retention = "INF") => ({ step, retention });
		expect(paths({ rollups: [rollup("1m"), rollup("5m"), rollup("1h"), rollup("1d")] })).toEqual(["rollups"]);
		expect(paths({ rollups: [rollup("2m")] })).toEqual(["rollups.0.step"]);
		expect(paths({ rollups: [rollup("1h"), rollup("1h")] })).toEqual(["rollups.1.step"]);
		expect(paths({ rollups: [rollup("6h", "1X")] })).toEqual(["rollups.0.retention"]);
	});

	it("refuses defaults with invalid templates or undeclared dimensions", () => {
		const details = checkTimeseriesDefinition(
			definition({
				defaults: { measurement: "{x}", timestamp: "{LEDGER[t]:%s}", dimensions: { site: "{", floor: "{twin}" } },
			}),
		);
		expect(details.map((d) => d.path)).toEqual([
			"defaults.measurement",
			"defaults.timestamp",
			"defaults.dimensions.site",
			"defaults.dimensions.floor",
		]);
		expect(details[0].message).toMatch(/^unknown field "x".* at position 1$/);
	});

	it("takes only the default database", () => {
		expect(paths({ database: "other" })).toEqual(["database"]);
	});
});

describe("checkEntryTimeseries", () => {
	const TABLES: Record<string, { dimensions: string[] }> = {
		site_temps: { dimensions: ["site", "zone"] },
		plain: { dimensions: [] },
	};
	const tables = (name: string) => (Object.hasOwn(TABLES, name) ? TABLES[name] : undefined);
	const check = (value: unknown) => checkEntryTimeseries(value, tables).map((detail) => detail.path);

	it("takes null and tables that exist with valid templates", () => {
		expect(check(null)).toEqual([]);
		expect(
			check({
				site_temps: { measurement: "temp", dimensions: { zone: "{entry_value.zone}" }, timestamp: "{LEDGER[at]}" },
				plain: {},
			}),
		).toEqual([]);
	});

	it("wants 1 to 10 tables as an object", () => {
		expect(check({})).toEqual([""]);
		expect(check([])).toEqual([""]);
		expect(check("site_temps")).toEqual([""]);
		const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`t${i}`, {}]));
		expect(check(eleven)).toEqual([""]);
	});

	it("refuses tables that do not exist, other members and undeclared dimensions", () => {
		expect(check({ nope: {}, constructor: {} })).toEqual(["nope", "constructor"]);
		expect(check({ plain: { measurement: "a", rollup: "x" } })).toEqual(["plain.rollup"]);
		expect(check({ site_temps: { dimensions: { zone: "a", floor: "b" } } })).toEqual(["site_temps.dimensions.floor"]);
		expect(check({ plain: null })).toEqual(["plain"]);
	});

	it("refuses templates that are not strings or do not parse", () => {
		expect(check({ plain: { measurement: 3, timestamp: null } })).toEqual(["plain.measurement", "plain.timestamp"]);
		expect(check({ site_temps: { dimensions: { zone: 1 } } })).toEqual(["site_temps.dimensions.zone"]);
		expect(check({ site_temps: { dimensions: [] } })).toEqual(["site_temps.dimensions"]);
		expect(check({ site_temps: { measurement: "{entry_name!r}", dimensions: { site: "}" } } })).toEqual([
			"site_temps.measurement",
			"site_temps.dimensions.site",
		]);
	});
});

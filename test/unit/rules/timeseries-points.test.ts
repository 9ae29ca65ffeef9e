import { describe, expect, expectTypeOf, it } from "vitest";
import type { Json } from "../../../src/rules/ast";
import { Budget } from "../../../src/rules/strings";
import type { MeasurementTypeName } from "../../../src/rules/timeseries-definition";
import { type PointFields, type PointInput, type PointTable, pointOf } from "../../../src/rules/timeseries-points";
import type { MeasurementType, Point } from "../../../src/timeseries/types";

const AT = 1_700_000_000;
const TWIN = "11111111-1111-4111-8111-111111111111";
const ACCOUNT = "22222222-2222-4222-8222-222222222222";
const OWNER = "33333333-3333-4333-8333-333333333333";

const TABLE: PointTable = {
	dimensions: { names: ["site", "floor"], types: ["string", "integer"] },
	measurements: {
		names: ["temp", "count", "state", "raw", "at"],
		types: ["float", "integer", "boolean", "json", "timestamp"],
	},
	defaults: null,
	retention: 7 * 86_400,
};

function input(patch: Partial<PointInput> = {}): PointInput {
	return {
		table: TABLE,
		templates: null,
		entry: "temp",
		value: 21.5,
		value_changed_ts: AT - 10,
		at: AT,
		entries: { temp: 21.5, site: "berlin", floor: "3", when: "2023-11-14T22:13:00Z" },
		twin: TWIN,
		owner: OWNER,
		ledger: ACCOUNT,
		...patch,
	};
}

function point(patch: Partial<PointInput> = {}) {
	const result = pointOf(input(patch));
	if (!("point" in result)) throw new Error(`dropped: ${result.dropped}`);
	return result.point;
}

describe("pointOf", () => {
	it("makes the shapes timeseries/types.ts names, which rules/ may not import", () => {
		expectTypeOf<PointFields>().toEqualTypeOf<Omit<Point, "seq">>();
		expectTypeOf<MeasurementTypeName>().toEqualTypeOf<MeasurementType>();
	});

	it("uses the built-in templates: measurement the entry's name, the commit time, null dimensions", () => {
		expect(point()).toEqual({
			entry: "temp",
			ts: AT,
			twin: TWIN,
			dims: [null, null],
			measurement: "temp",
			value: 21.5,
		});
	});

	it("takes the entry's template, else the table's default, per template", () => {
		const table = {
			...TABLE,
			defaults: {
				measurement: "count",
				dimensions: { site: "{LEDGER[site]}", floor: "{LEDGER[floor]}" },
				timestamp: "{value_changed_ts}",
			},
		};
		expect(point({ table, value: 4 })).toMatchObject({
			measurement: "count",
			ts: AT - 10,
			dims: ["berlin", 3],
			value: 4,
		});
		const templates = { measurement: "temp", dimensions: { site: "{twin}/{owner}/{ledger}" } };
		expect(point({ table, templates })).toMatchObject({
			measurement: "temp",
			ts: AT - 10,
			dims: [`${TWIN}/${OWNER}/${ACCOUNT}`, 3],
			value: 21.5,
		});
	});

	it("reads the entry's fields in templates", () => {
		const templates = {
			measurement: "{entry_value[kind]}",
			dimensions: { site: "{entry_name}", floor: "{entry_value.floor}" },
			timestamp: "{entry_value[at]}",
		};
		const value = { kind: "raw", floor: 2, at: AT - 60 };
		expect(point({ entry: "reading", value, templates })).toEqual({
			entry: "reading",
			ts: AT - 60,
			twin: TWIN,
			dims: ["reading", 2],
			measurement: "raw",
			value,
		});
	});

	it("coerces the timestamp from RFC 3339 text or seconds, and dimensions to their types", () => {
		expect(point({ templates: { timestamp: "{LEDGER[when]}" } }).ts).toBe(AT - 20);
		expect(point({ templates: { timestamp: "2023-11-14T22:13:19.5+00:00" } }).ts).toBe(AT - 0.5);
		expect(point({ templates: { dimensions: { site: "{LEDGER[temp]}", floor: "x{LEDGER[floor]}" } } }).dims).toEqual([
			"21.5",
			null,
		]);
	});

	it("coerces the value to the measurement's type, null when it does not fit, and keeps the point", () => {
		expect(point({ entry: "count", value: "12" }).value).toBe(12);
		expect(point({ entry: "count", value: 1.5 }).value).toBeNull();
		expect(point({ entry: "state", value: "TRUE" }).value).toBe(true);
		expect(point({ entry: "state", value: 1 }).value).toBeNull();
		expect(point({ entry: "at", value: "2023-11-14T22:13:20Z" }).value).toBe(AT);
		expect(point({ entry: "temp", value: { not: "a number" } }).value).toBeNull();
		const raw: Json = { any: ["json", 1, null] };
		expect(point({ entry: "raw", value: raw }).value).toEqual(raw);
		expect(point({ entry: "raw", value: null }).value).toBeNull();
	});

	it("drops a point whose measurement is not declared", () => {
		expect(pointOf(input({ entry: "humidity" }))).toEqual({ dropped: "unknown measurement" });
		expect(pointOf(input({ templates: { measurement: "{LEDGER[temp]}" } }))).toEqual({
			dropped: "unknown measurement",
		});
		expect(pointOf(input({ templates: { measurement: "{LEDGER[missing]}" } }))).toEqual({
			dropped: "unknown measurement",
		});
		expect(pointOf(input({ templates: { measurement: "Temp" } }))).toEqual({ dropped: "unknown measurement" });
	});

	it("drops a point without a timestamp", () => {
		expect(pointOf(input({ templates: { timestamp: "{LEDGER[missing]}" } }))).toEqual({ dropped: "no timestamp" });
		expect(pointOf(input({ templates: { timestamp: "yesterday" } }))).toEqual({ dropped: "no timestamp" });
		expect(pointOf(input({ templates: { timestamp: "2023-11-14T22:13:20" } }))).toEqual({ dropped: "no timestamp" });
	});

	it("drops a point older than the retention or more than 300 seconds ahead", () => {
		const at = (ts: number) => pointOf(input({ entries: { t: ts }, templates: { timestamp: "{LEDGER[t]}" } }));
		expect(at(AT - 7 * 86_400)).toMatchObject({ point: { ts: AT - 7 * 86_400 } });
		expect(at(AT - 7 * 86_400 - 0.001)).toEqual({ dropped: "late" });
		expect(at(AT + 300)).toMatchObject({ point: { ts: AT + 300 } });
		expect(at(AT + 300.001)).toEqual({ dropped: "future" });
		const forever = pointOf(
			input({ table: { ...TABLE, retention: null }, entries: { t: 0 }, templates: { timestamp: "{LEDGER[t]}" } }),
		);
		expect(forever).toMatchObject({ point: { ts: 0 } });
	});

	it("charges the templates' work to the budget", () => {
		const budget = new Budget(10_000);
		point({ budget, templates: { dimensions: { site: "{LEDGER[site]}" }, timestamp: "{LEDGER[when]}" } });
		expect(budget.remaining).toBeLessThan(10_000);
	});
});

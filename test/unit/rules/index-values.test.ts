import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/rules/ast";
import {
	CANONICAL_TYPES,
	type Canonical,
	canonicalType,
	coerce,
	MAX_STRING_VALUE,
} from "../../../src/rules/index-values";
import { Budget } from "../../../src/rules/strings";

const MAX = Number.MAX_SAFE_INTEGER;

// Values no type takes.
const STRUCTURED: Json[] = [null, [], [1], {}, { a: 1 }];

describe("canonicalType", () => {
	it("knows the five types and the original's aliases", () => {
		expect(CANONICAL_TYPES).toEqual(["string", "integer", "float", "boolean", "timestamp"]);
		const expected: Record<string, Canonical> = {
			string: "string",
			varchar: "string",
			text: "string",
			"character varying": "string",
			integer: "integer",
			int: "integer",
			bigint: "integer",
			smallint: "integer",
			float: "float",
			"double precision": "float",
			real: "float",
			numeric: "float",
			boolean: "boolean",
			bool: "boolean",
			timestamp: "timestamp",
			timestamptz: "timestamp",
		};
		for (const [name, type] of Object.entries(expected)) {
			expect(canonicalType(name), name).toBe(type);
			expect(canonicalType(name.toUpperCase()), name).toBe(type);
		}
		expect(canonicalType("Double Precision")).toBe("float");
	});

	it("calls the original's other types unsupported", () => {
		for (const name of ["json", "jsonb", "date", "time", "interval", "uuid", "geometry", "geography", "JSONB"]) {
			expect(canonicalType(name), name).toBe("unsupported");
		}
	});

	it("knows nothing else", () => {
		for (const name of [
			"",
			"str",
			"number",
			"character  varying",
			" text",
			"varchar(10)",
			"toString",
			"constructor",
			"__proto__",
		]) {
			expect(canonicalType(name), name).toBeUndefined();
		}
	});
});

describe("coerce to string", () => {
	it("keeps strings of at most MAX_STRING_VALUE characters", () => {
		expect(MAX_STRING_VALUE).toBe(1024);
		expect(coerce("", "string")).toBe("");
		expect(coerce("abc", "string")).toBe("abc");
		expect(coerce("x".repeat(1024), "string")).toBe("x".repeat(1024));
		expect(coerce("x".repeat(1025), "string")).toBeNull();
	});

	it("prints numbers and booleans as JSON does", () => {
		expect(coerce(12, "string")).toBe("12");
		expect(coerce(-1.5, "string")).toBe("-1.5");
		expect(coerce(1e21, "string")).toBe("1e+21");
		expect(coerce(true, "string")).toBe("true");
		expect(coerce(false, "string")).toBe("false");
	});

	it("takes nothing else", () => {
		for (const value of STRUCTURED) expect(coerce(value, "string")).toBeNull();
	});
});

describe("coerce to integer", () => {
	it("takes integral numbers within ±(2^53−1)", () => {
		expect(coerce(0, "integer")).toBe(0);
		expect(Object.is(coerce(-0, "integer"), 0)).toBe(true);
		expect(coerce(42, "integer")).toBe(42);
		expect(coerce(-7, "integer")).toBe(-7);
		expect(coerce(3.0, "integer")).toBe(3);
		expect(coerce(MAX, "integer")).toBe(MAX);
		expect(coerce(-MAX, "integer")).toBe(-MAX);
		expect(coerce(MAX + 1, "integer")).toBeNull();
		expect(coerce(-MAX - 1, "integer")).toBeNull();
		expect(coerce(1e300, "integer")).toBeNull();
		expect(coerce(1.5, "integer")).toBeNull();
		expect(coerce(Number.NaN, "integer")).toBeNull();
		expect(coerce(Number.POSITIVE_INFINITY, "integer")).toBeNull();
	});

	it("takes strings of digits with an optional minus within the same range", () => {
		expect(coerce("42", "integer")).toBe(42);
		expect(coerce("-42", "integer")).toBe(-42);
		expect(coerce("007", "integer")).toBe(7);
		expect(Object.is(coerce("-0", "integer"), 0)).toBe(true);
		expect(coerce("9007199254740991", "integer")).toBe(MAX);
		expect(coerce("-9007199254740991", "integer")).toBe(-MAX);
		expect(coerce("9007199254740992", "integer")).toBeNull();
		expect(coerce("99999999999999999999", "integer")).toBeNull();
		for (const text of ["", "-", "+1", " 1", "1 ", "1.0", "1e3", "0x10", "１", "abc"]) {
			expect(coerce(text, "integer"), text).toBeNull();
		}
	});

	it("takes nothing else", () => {
		for (const value of [...STRUCTURED, true, false]) expect(coerce(value, "integer")).toBeNull();
	});
});

describe("coerce to float", () => {
	it("takes finite numbers", () => {
		expect(coerce(1.5, "float")).toBe(1.5);
		expect(coerce(-3, "float")).toBe(-3);
		expect(coerce(1e300, "float")).toBe(1e300);
		expect(Object.is(coerce(-0, "float"), 0)).toBe(true);
		expect(coerce(Number.NaN, "float")).toBeNull();
		expect(coerce(Number.NEGATIVE_INFINITY, "float")).toBeNull();
	});

	it("takes strings holding a JSON number", () => {
		expect(coerce("1.5", "float")).toBe(1.5);
		expect(coerce("-0.25", "float")).toBe(-0.25);
		expect(coerce("12", "float")).toBe(12);
		expect(coerce("1e3", "float")).toBe(1000);
		expect(coerce("1.5E-2", "float")).toBe(0.015);
		expect(coerce("2e+2", "float")).toBe(200);
		expect(coerce("1e400", "float")).toBeNull();
		for (const text of ["", "-", ".5", "5.", "+1", "01", " 1", "1 ", "0x10", "NaN", "Infinity", "1e", "1.5.2", "abc"]) {
			expect(coerce(text, "float"), text).toBeNull();
		}
	});

	it("takes nothing else", () => {
		for (const value of [...STRUCTURED, true, false]) expect(coerce(value, "float")).toBeNull();
	});
});

describe("coerce to boolean", () => {
	it("takes true, false and those words in any case", () => {
		expect(coerce(true, "boolean")).toBe(true);
		expect(coerce(false, "boolean")).toBe(false);
		expect(coerce("true", "boolean")).toBe(true);
		expect(coerce("TRUE", "boolean")).toBe(true);
		expect(coerce("False", "boolean")).toBe(false);
		expect(coerce("fAlSe", "boolean")).toBe(false);
	});

	it("takes nothing else", () => {
		for (const value of [...STRUCTURED, 0, 1, "1", "0", "yes", "t", " true", "true ", ""]) {
			expect(coerce(value, "boolean"), JSON.stringify(value)).toBeNull();
		}
	});
});

describe("coerce to timestamp", () => {
	it("takes numbers ≥ 0 as seconds, rounded to 3 decimals", () => {
		expect(coerce(0, "timestamp")).toBe(0);
		expect(Object.is(coerce(-0, "timestamp"), 0)).toBe(true);
		expect(coerce(1700000000, "timestamp")).toBe(1700000000);
		expect(coerce(1700000000.1234, "timestamp")).toBe(1700000000.123);
		expect(coerce(1700000000.1236, "timestamp")).toBe(1700000000.124);
		expect(coerce(0.0004, "timestamp")).toBe(0);
		expect(coerce(0.0006, "timestamp")).toBe(0.001);
		expect(coerce(-1, "timestamp")).toBeNull();
		expect(coerce(-0.0001, "timestamp")).toBeNull();
		expect(coerce(1e307, "timestamp")).toBeNull();
		expect(coerce(Number.NaN, "timestamp")).toBeNull();
	});

	it("takes RFC 3339 strings with a zone as seconds since the epoch", () => {
		expect(coerce("1970-01-01T00:00:00Z", "timestamp")).toBe(0);
		expect(coerce("2023-11-14T22:13:20Z", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14t22:13:20z", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14 22:13:20Z", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-15T00:13:20+02:00", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14T17:13:20-05:00", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14T22:13:20+00:00", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14T22:13:20-00:00", "timestamp")).toBe(1700000000);
		expect(coerce("2023-11-14T22:13:20.5Z", "timestamp")).toBe(1700000000.5);
		expect(coerce("2023-11-14T22:13:20.123Z", "timestamp")).toBe(1700000000.123);
		expect(coerce("2023-11-14T22:13:20.1234Z", "timestamp")).toBe(1700000000.123);
		expect(coerce("2023-11-14T22:13:20.1235Z", "timestamp")).toBe(1700000000.124);
		expect(coerce("2023-11-14T22:13:20.999999Z", "timestamp")).toBe(1700000001);
		expect(coerce("2024-02-29T00:00:00Z", "timestamp")).toBe(1709164800);
		expect(coerce("2000-02-29T00:00:00Z", "timestamp")).toBe(951782400);
		// A leap second is the next minute's first, as in Postgres.
		expect(coerce("2016-12-31T23:59:60Z", "timestamp")).toBe(1483228800);
		// Dates before the epoch are negative; years below 100 are not read as 19xx.
		expect(coerce("1969-12-31T23:59:59Z", "timestamp")).toBe(-1);
		expect(coerce("0050-01-01T00:00:00Z", "timestamp")).toBe(Date.UTC(2050, 0, 1) / 1000 - 2000 * 365.2425 * 86400);
	});

	it("refuses strings without a zone or naming no real date", () => {
		for (const text of [
			"2023-11-14T22:13:20",
			"2023-11-14",
			"22:13:20Z",
			"2023-11-14T22:13Z",
			"2023-11-14T22:13:20.Z",
			"2023-11-14T22:13:20+0200",
			"2023-11-14T22:13:20+02",
			"2023-13-01T00:00:00Z",
			"2023-00-01T00:00:00Z",
			"2023-02-29T00:00:00Z",
			"1900-02-29T00:00:00Z",
			"2023-04-31T00:00:00Z",
			"2023-11-00T00:00:00Z",
			"2023-11-14T24:00:00Z",
			"2023-11-14T23:60:00Z",
			"2023-11-14T23:59:61Z",
			"2023-11-14T22:13:20+24:00",
			"2023-11-14T22:13:20+02:60",
			" 2023-11-14T22:13:20Z",
			"2023-11-14T22:13:20Z ",
			"2023-11-14X22:13:20Z",
			"23-11-14T22:13:20Z",
			"1700000000",
			"",
		]) {
			expect(coerce(text, "timestamp"), text).toBeNull();
		}
	});

	it("takes nothing else", () => {
		for (const value of [...STRUCTURED, true, false]) expect(coerce(value, "timestamp")).toBeNull();
	});
});

describe("coerce a text longer than MAX_STRING_VALUE", () => {
	it("to null whatever the type, before any pattern reads it, where a shorter one of the same form converts", () => {
		// Each text reads as its value at 1,024 characters and would at 1,025 but for the limit.
		const padded = (type: Canonical, n: number) =>
			type === "integer"
				? `${"0".repeat(n - 1)}7`
				: type === "float"
					? `1.${"0".repeat(n - 3)}5`
					: `2023-11-14T22:13:20.${"0".repeat(n - 21)}Z`;
		const values: [Canonical, Json][] = [
			["integer", 7],
			["float", 1],
			["timestamp", 1700000000],
		];
		for (const [type, value] of values) {
			expect(padded(type, 1024)).toHaveLength(1024);
			expect(coerce(padded(type, 1024), type), type).toBe(value);
			expect(coerce(padded(type, 1025), type), type).toBeNull();
		}
	});

	it("charges the text it reads", () => {
		const budget = new Budget(1_000_000, 0);
		coerce("x".repeat(1000), "float", budget);
		expect(1_000_000 - budget.remaining).toBeGreaterThanOrEqual(1000);
		const untouched = new Budget(1_000_000, 0);
		coerce("x".repeat(5000), "float", untouched);
		expect(untouched.remaining).toBe(1_000_000);
	});
});

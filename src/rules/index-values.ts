// The types of an Indexes table's properties and the coercion of a rendered template to one
// (docs/indexes.md "Definitions"). A value that does not fit its type is null, never an error: the
// row stays, as in the original ("the value will be null").

import type { Json } from "./ast";
import { UNITS_PER_VALUE } from "./equal";
import type { Budget } from "./strings";

export const CANONICAL_TYPES = ["string", "integer", "float", "boolean", "timestamp"] as const;
export type Canonical = (typeof CANONICAL_TYPES)[number];

// The original's Postgres names, so that definitions written for it pass.
const ALIASES: Record<string, Canonical> = {
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

// Types the original accepts and this one defers: refused as "not supported" rather than unknown.
const UNSUPPORTED = new Set(["json", "jsonb", "date", "time", "interval", "uuid", "geometry", "geography"]);

// The longest text any type accepts, and so the longest a template renders.
export const MAX_STRING_VALUE = 1024;

// The canonical type a `types` name stands for (any case), "unsupported" for the original's
// other types, undefined for a name neither knows.
export function canonicalType(name: string): Canonical | "unsupported" | undefined {
	const lower = name.toLowerCase();
	if (Object.hasOwn(ALIASES, lower)) return ALIASES[lower];
	return UNSUPPORTED.has(lower) ? "unsupported" : undefined;
}

const INTEGER = /^-?[0-9]+$/;
const JSON_NUMBER = /^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$/;
// RFC 3339 date-time (§5.6): "T" or a space between date and time (its note allows both, as
// Postgres does), any number of fraction digits, and a zone that is required.
const DATE_TIME =
	/^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]+))?(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))$/;

// No type takes a text longer than MAX_STRING_VALUE characters, so a longer one is null before
// any pattern reads it. The work (a pattern's pass over the text) is charged to `budget`.
export function coerce(value: Json, type: Canonical, budget?: Budget): Json {
	if (typeof value === "string") {
		if (value.length > MAX_STRING_VALUE) return null;
		budget?.spend(UNITS_PER_VALUE + value.length);
	}
	switch (type) {
		case "string":
			if (typeof value === "string") return value;
			return typeof value === "number" || typeof value === "boolean" ? JSON.stringify(value) : null;
		case "integer": {
			const number = typeof value === "string" && INTEGER.test(value) ? Number(value) : value;
			return typeof number === "number" && Number.isInteger(number) && Math.abs(number) <= Number.MAX_SAFE_INTEGER
				? number + 0 // -0 is 0
				: null;
		}
		case "float": {
			const number = typeof value === "string" && JSON_NUMBER.test(value) ? Number(value) : value;
			return typeof number === "number" && Number.isFinite(number) ? number + 0 : null;
		}
		case "boolean":
			if (typeof value === "boolean") return value;
			if (typeof value !== "string") return null;
			return value.toLowerCase() === "true" ? true : value.toLowerCase() === "false" ? false : null;
		case "timestamp":
			if (typeof value === "number") return value >= 0 ? milliseconds(Math.round(value * 1000)) : null;
			return typeof value === "string" ? timestamp(value) : null;
	}
}

// Seconds with at most 3 decimals, or null past what a number holds.
function milliseconds(ms: number): number | null {
	return Number.isFinite(ms) ? ms / 1000 + 0 : null;
}

// Seconds since the epoch of an RFC 3339 date-time, rounded to the millisecond (half up);
// null when it has no zone or names a date that does not exist.
function timestamp(text: string): number | null {
	const match = DATE_TIME.exec(text);
	if (!match) return null;
	const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number);
	const [, , , , , , , fraction = "", utc, sign, zoneHour, zoneMinute] = match;
	if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month)) return null;
	// Second 60 is a leap second, which RFC 3339 allows; as in Postgres it is the next minute's first.
	if (hour > 23 || minute > 59 || second > 60) return null;
	const offset = utc ? 0 : (sign === "-" ? -1 : 1) * (Number(zoneHour) * 60 + Number(zoneMinute));
	if (!utc && (Number(zoneHour) > 23 || Number(zoneMinute) > 59)) return null;
	const date = new Date(0);
	// setUTCFullYear, not Date.UTC: Date.UTC reads years 0..99 as 1900..1999.
	date.setUTCFullYear(year, month - 1, day);
	date.setUTCHours(hour, minute - offset, second, 0);
	const digits = fraction.padEnd(4, "0");
	const fractionMs = Number(digits.slice(0, 3)) + (digits[3] >= "5" ? 1 : 0);
	return milliseconds(date.getTime() + fractionMs);
}

function daysIn(year: number, month: number): number {
	if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
	return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

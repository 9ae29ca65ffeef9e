// What the timeseries tests share: definitions and paths, tables created and read, ledger
// writes that feed them, and queries walked to the end.
import { expect } from "vitest";
import { call } from "../support/requests";

export const TIMESERIES = "/account/services/timeseries";

export const timeseriesPath = (name: string, tail = "") => `${TIMESERIES}/${name}${tail}`;

// A table with one dimension `site` (text) and measurements `celsius` (float) and `state` (text).
export function definition(extra: Record<string, unknown> = {}) {
	return {
		dimensions: { names: ["site"], types: ["text"] },
		measurements: { names: ["celsius", "state"], types: ["float", "text"] },
		...extra,
	};
}

export async function createTables(secret: string, timeseries: Record<string, unknown>) {
	const res = await call("POST", TIMESERIES, { secret, body: { timeseries } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.timeseries as Record<string, any>;
}

export async function table(secret: string, name: string) {
	const res = await call("GET", timeseriesPath(name), { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body;
}

export function query(secret: string, name: string, params: Record<string, string | number | boolean>) {
	const search = new URLSearchParams(Object.entries(params).map(([key, value]) => [key, String(value)]));
	return call("GET", timeseriesPath(name, `/data?${search}`), { secret });
}

// Every page of a query, to the end.
export async function walk(secret: string, name: string, params: Record<string, string | number | boolean>) {
	const rows: unknown[][] = [];
	const pages: { rows: unknown[][]; cursor: string | null; resolution: string; columns: string[] }[] = [];
	let cursor: string | null = null;
	do {
		const res = await query(secret, name, { ...params, ...(cursor === null ? {} : { cursor }) });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		rows.push(...res.body.rows);
		pages.push(res.body);
		cursor = res.body.cursor;
	} while (cursor !== null);
	return { rows, pages };
}

// A ledger write of entries feeding tables: `value` per entry, each naming `tables` (with
// their templates) in its timeseries property.
export async function writeValues(
	secret: string,
	twin: string,
	values: Record<string, unknown>,
	timeseries: Record<string, unknown>,
	method: "POST" | "PATCH" = "PATCH",
) {
	const entries = Object.fromEntries(
		Object.entries(values).map(([name, value]) => [name, method === "POST" ? { value, timeseries } : { value }]),
	);
	const res = await call(method, `/twins/${twin}/ledgers/personal`, { secret, body: { entries } });
	expect(res.status, JSON.stringify(res.body)).toBe(method === "POST" ? 201 : 200);
	return res.body;
}

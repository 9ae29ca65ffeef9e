// What the indexes tests share: table definitions and paths, tables created, read and queried to
// the end, a build awaited, and what lies behind a table (its rows in D1, the work the account's
// object has left for its alarm), read or seeded directly.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import type { AccountDO } from "../../src/objects";
import { call } from "../support/requests";
import { until } from "../support/waiting";
import { dbOf } from "../support/shards";

export const INDEXES = "/account/services/indexes";

export const indexPath = (name: string, tail = "") => `${INDEXES}/${name}${tail}`;

export type IndexDefinition = {
	rule: string;
	properties: { names: string[]; types: string[] };
	templates: { properties: Record<string, string> };
};

// A definition from its rule and, by property name, each property's type and template.
export function indexDefinition(
	rule: string,
	properties: Record<string, [type: string, template: string]>,
): IndexDefinition {
	const names = Object.keys(properties);
	return {
		rule,
		properties: { names, types: names.map((name) => properties[name][0]) },
		templates: { properties: Object.fromEntries(names.map((name) => [name, properties[name][1]])) },
	};
}

// create_indexes_table, expected to answer 201; answers its `indexes`.
export async function createIndexes(secret: string, indexes: Record<string, unknown>) {
	const res = await call("POST", INDEXES, { secret, body: { indexes } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.indexes as Record<string, any>;
}

// get_indexes_table, expected to answer 200; answers the record.
export async function indexTable(secret: string, name: string) {
	const res = await call("GET", indexPath(name), { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body;
}

// The table's record once its build is over: the alarm runs it, nothing to await.
export function indexBuilt(secret: string, name: string, timeoutMs?: number) {
	return until(
		() => indexTable(secret, name),
		(record) => record.status !== "building",
		`the build of ${name}`,
		timeoutMs,
	);
}

// One page of query_indexes_table.
export function queryIndex(secret: string, name: string, query: Record<string, string | number> = {}) {
	const search = new URLSearchParams(Object.entries(query).map(([key, value]) => [key, String(value)]));
	const text = search.toString();
	return call("GET", indexPath(name, `/data${text ? `?${text}` : ""}`), { secret });
}

export type IndexRow = { twin: string; properties: Record<string, unknown>; updated_ts: number };

// Every page of a query, to the end: the rows in the order they came, and the pages.
export async function indexRows(secret: string, name: string, query: Record<string, string | number> = {}) {
	const rows: IndexRow[] = [];
	const pages: { rows: IndexRow[]; cursor: string | null }[] = [];
	let cursor: string | null = null;
	do {
		const res = await queryIndex(secret, name, { ...query, ...(cursor === null ? {} : { cursor }) });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		rows.push(...res.body.rows);
		pages.push(res.body);
		cursor = res.body.cursor;
	} while (cursor !== null);
	return { rows, pages };
}

// A table's rows by twin, read to the end.
export async function indexRowsByTwin(secret: string, name: string, query: Record<string, string | number> = {}) {
	const { rows } = await indexRows(secret, name, { count: 1000, ...query });
	return Object.fromEntries(rows.map((row) => [row.twin, row]));
}

// The uuid and current generation of an account's table, read from D1.
export async function indexTableRow(account: string, name: string) {
	const row = await dbOf(account)
		.prepare("SELECT uuid, generation FROM index_tables WHERE account = ? AND name = ?")
		.bind(account, name)
		.first<{ uuid: string; generation: number }>();
	if (!row) throw new Error(`no index table ${name}`);
	return row;
}

// Rows written straight into a table's current generation in D1, for tests that need
// thousands: the table's counts (stats) do not include them.
export async function seedIndexRows(
	account: string,
	name: string,
	rows: { twin: string; properties: Record<string, unknown> }[],
) {
	const { uuid, generation } = await indexTableRow(account, name);
	const db = dbOf(account);
	const statement = db.prepare(
		'INSERT INTO index_rows ("table", generation, twin, properties, size, updated_ts) VALUES (?, ?, ?, ?, ?, 1)',
	);
	const bound = rows.map(({ twin, properties }) => {
		const text = JSON.stringify(properties);
		return statement.bind(uuid, generation, twin, text, new TextEncoder().encode(text).length);
	});
	for (let i = 0; i < bound.length; i += 500) await db.batch(bound.slice(i, i + 500));
}

// How many rows a table (by uuid) has in D1 below a generation: the old ones the alarm deletes.
export async function oldIndexRows(uuid: string, below: number) {
	return (await dbOf(uuid)
		.prepare('SELECT count(*) AS n FROM index_rows WHERE "table" = ? AND generation < ?')
		.bind(uuid, below)
		.first<{ n: number }>())!.n;
}

// The index work the account's object has left for its alarm: builds under way and old rows
// still to delete. Zero once the alarm has done all a definition write gave it.
export async function indexWorkLeft(account: string) {
	return runInDurableObject(env.ACCOUNTS.getByName(account), async (_instance: AccountDO, state) => {
		const builds = (await state.storage.get<Record<string, unknown>>("index-builds")) ?? {};
		const drops = (await state.storage.get<unknown[]>("index-drops")) ?? [];
		return Object.keys(builds).length + drops.length;
	});
}

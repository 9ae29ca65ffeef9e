import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";

// A lookup by (account, uuid) must cost the same for another account's row as for none at
// all: Server-Timing reports rows read, and a difference would reveal that the uuid exists.
// By its primary key SQLite reads the row before the account test rejects it; through the
// (account, uuid) index it finds nothing, exactly as for an absent uuid.
export function byAccountIndex(table: SQLiteTable, index: string): SQL {
	return sql`${table} INDEXED BY ${sql.identifier(index)}`;
}

// The table's columns as selectable expressions: drizzle accepts plain columns only from a
// table it names itself, not from the source above. Each keeps its column's decoding.
export function columnsOf<T extends SQLiteTable>(table: T) {
	const columns = Object.entries(getTableColumns(table)).map(([key, column]) => [key, sql`${column}`.mapWith(column)]);
	return Object.fromEntries(columns) as { [K in keyof T["$inferSelect"]]: SQL<T["$inferSelect"][K]> };
}

import { drizzle } from "drizzle-orm/d1";

export type Database = ReturnType<typeof database>;

// No relational query API is used, so the schema is not handed over: drizzle would rebuild
// its relation map from every table on each call, and this runs once per request.
export function database(d1: D1Database) {
	return drizzle(d1);
}

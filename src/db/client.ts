import { drizzle } from "drizzle-orm/d1";
import type { Sessions } from "./shards";

export type Database = ReturnType<typeof database>;

// No relational query API is used, so the schema is not handed over: drizzle would rebuild
// its relation map from every table on each call, and this runs once per request.
export function database(d1: D1Database) {
	return drizzle(d1);
}

// A request's drizzle, built on its D1 session the first time a handler queries through it.
// Handlers reach it through this module rather than the request's context, so that drizzle
// loads with the first operation that uses it: the request path itself (authentication,
// /whoami, a scan page, which the account's object reads) never does.
const built = new WeakMap<D1Database, Database>();

export function dbOf({ d1 }: { d1: D1Database }): Database {
	let db = built.get(d1);
	if (!db) {
		db = database(d1);
		built.set(d1, db);
	}
	return db;
}

// The request's drizzle on the database of the account `id` belongs to (a twin's owner, a
// ledger's account): a row is read where its id says it lives (docs/scaling.md).
export const dbFor = (ctx: { shards: Sessions }, id: string): Database => dbOf({ d1: ctx.shards.for(id) });

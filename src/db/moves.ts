import { BUCKETS } from "../base/shards";

// Moving a bucket's rows from one database to another (docs/scaling.md, "Moving a bucket").
// Every table's rows live in the database of one of their columns (its home column): the
// account's, or for a few tables the row that names it (a twin's owner, a subscription's
// publisher, a doc's twin, an index row's table, a delivery's subscription). A bucket's rows are
// those whose home column is a version-8 id starting with the bucket's two hex digits; a
// version-4 id (an account from before sharding, on DB_0) never moves. The directory of public
// identities is placed by a hash instead, its home column the bucket number itself (`numbered`).
export type MovedTable = { name: string; home: string; counter?: string; numbered?: true };

// In the order rows are copied: a table before those whose keys point to it (deletes run the
// other way). `counter`: an integer key the database assigns (AUTOINCREMENT): it is not copied, the target
// assigns its own in the same order, since the source's values may be taken there.
export const MOVED_TABLES: readonly MovedTable[] = [
	{ name: "accounts", home: "uuid" },
	{ name: "roles", home: "account" },
	{ name: "users", home: "account" },
	{ name: "user_secrets", home: "account" },
	{ name: "secret_pins", home: "account" },
	{ name: "twins", home: "owner" },
	{ name: "subscriptions", home: "publisher" },
	{ name: "notification_grants", home: "account" },
	{ name: "notification_outbox", home: "account" },
	{ name: "stream_outbox", home: "account", counter: "id" },
	{ name: "outbox_sights", home: "account" },
	{ name: "webhook_deliveries", home: "subscription", counter: "seq" },
	{ name: "twin_identities", home: "account" },
	{ name: "twin_holders", home: "twin" },
	{ name: "directory_outbox", home: "account", counter: "id" },
	{ name: "identity_directory", home: "bucket", numbered: true },
	{ name: "ledger_entries", home: "account" },
	{ name: "ledger_history", home: "account" },
	{ name: "uploads", home: "account" },
	{ name: "docs", home: "twin" },
	{ name: "doc_outbox", home: "account", counter: "id" },
	{ name: "doc_garbage", home: "account" },
	{ name: "index_tables", home: "account" },
	{ name: "index_rows", home: "table" },
	{ name: "timeseries_tables", home: "account" },
	{ name: "timeseries_outbox", home: "account", counter: "id" },
	{ name: "timeseries_chunks", home: "account" },
	{ name: "stickers", home: "account" },
	{ name: "sticker_recipients", home: "recipient" },
	{ name: "sticker_copies", home: "account", counter: "id" },
	{ name: "account_log", home: "account", counter: "id" },
	{ name: "idempotency_keys", home: "account" },
	{ name: "idempotency_quota", home: "account" },
	{ name: "identity_providers", home: "account" },
	{ name: "user_external_ids", home: "account" },
	{ name: "jobs", home: "account" },
	{ name: "job_lines", home: "job" },
];

export const prefixOf = (bucket: number) => bucket.toString(16).padStart(2, "0");

export const validBucket = (bucket: number) => Number.isInteger(bucket) && bucket >= 0 && bucket < BUCKETS;

// The rows of a bucket in a table: a range of the home column's index, then the version.
function ofBucket(table: MovedTable, bucket: number): { where: string; values: (string | number)[] } {
	if (table.numbered) return { where: `"${table.home}" = ?`, values: [bucket] };
	const next = bucket + 1 < BUCKETS ? prefixOf(bucket + 1) : "g";
	const home = `"${table.home}"`;
	return {
		where: `${home} >= ? AND ${home} < ? AND substr(${home}, 15, 1) = '8'`,
		values: [prefixOf(bucket), next],
	};
}

export type Row = Record<string, unknown> & { _rowid: number };

// A page of a bucket's rows of one table, in rowid order after `after`.
export async function bucketPage(db: D1Database, table: MovedTable, bucket: number, after: number, limit: number) {
	const { where, values } = ofBucket(table, bucket);
	const { results } = await db
		.prepare(`SELECT rowid AS _rowid, * FROM "${table.name}" WHERE ${where} AND rowid > ? ORDER BY rowid LIMIT ?`)
		.bind(...values, after, limit)
		.all<Row>();
	return results;
}

// The statements that write rows as they are (one statement each, so a row of many columns
// stays under D1's 100 bound parameters). The bucket's rows do not change while it moves, so a
// row a retried step copied before is the same row: it is left as it is (replacing it would
// delete a row other rows' keys point to).
export function copyStatements(db: D1Database, table: MovedTable, rows: Row[]): D1PreparedStatement[] {
	return rows.map((row) => {
		const columns = Object.keys(row).filter((column) => column !== "_rowid" && column !== table.counter);
		const names = columns.map((column) => `"${column}"`).join(", ");
		const marks = columns.map(() => "?").join(", ");
		return db
			.prepare(`INSERT OR IGNORE INTO "${table.name}" (${names}) VALUES (${marks})`)
			.bind(...columns.map((column) => row[column] ?? null));
	});
}

// Deletes up to `limit` of a bucket's rows of one table; answers how many went.
export async function deleteBucketRows(db: D1Database, table: MovedTable, bucket: number, limit: number) {
	const { where, values } = ofBucket(table, bucket);
	const result = await db
		.prepare(`DELETE FROM "${table.name}" WHERE rowid IN (SELECT rowid FROM "${table.name}" WHERE ${where} LIMIT ?)`)
		.bind(...values, limit)
		.run();
	return result.meta.changes ?? 0;
}

export type MoveRow = {
	bucket: number;
	prefix: string;
	source: string;
	target: string;
	state: "copying" | "copied" | "finishing" | "aborting";
	started_ts: number;
};

// The move's row, written on every shard (docs/scaling.md): the credential query of a request
// for one of the bucket's accounts reads it in the database it asks.
export function putMove(db: D1Database, move: MoveRow) {
	return db
		.prepare(
			"INSERT OR REPLACE INTO bucket_moves (bucket, prefix, source, target, state, started_ts) VALUES (?, ?, ?, ?, ?, ?)",
		)
		.bind(move.bucket, move.prefix, move.source, move.target, move.state, move.started_ts)
		.run();
}

export function deleteMove(db: D1Database, bucket: number) {
	return db.prepare("DELETE FROM bucket_moves WHERE bucket = ?").bind(bucket).run();
}

export function findMoves(db: D1Database) {
	return db.prepare("SELECT * FROM bucket_moves ORDER BY bucket").all<MoveRow>();
}

// Whether the bucket of an account is moving, for a write that does not read a credential (a
// PIN redemption, a webhook token, an upload) or that writes another account's rows.
export async function isMoving(db: D1Database, bucket: number): Promise<boolean> {
	return (await db.prepare("SELECT 1 FROM bucket_moves WHERE bucket = ?").bind(bucket).first()) !== null;
}

// The buckets moving now, as any shard has them (every move's row is on every shard).
export async function movingBuckets(db: D1Database): Promise<Set<number>> {
	const { results } = await db.prepare("SELECT bucket FROM bucket_moves").all<{ bucket: number }>();
	return new Set(results.map((row) => row.bucket));
}

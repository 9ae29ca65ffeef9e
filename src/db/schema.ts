import { sql } from "drizzle-orm";
import type { Description, RoleRules, Statement } from "../base/caller";
import { check, index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

// Timestamps are seconds since the epoch with millisecond precision, as the API shows them.
// JSON columns hold the objects exactly as the API accepts and returns them.

export const accounts = sqliteTable("accounts", {
	uuid: text("uuid").primaryKey(),
	created_ts: real("created_ts").notNull(),
	// created_ts until the account is updated (a migration backfilled existing rows).
	updated_ts: real("updated_ts").notNull().default(0),
	// Where the original routes resource access logs; only null or {} are accepted here.
	resource_access_log: text("resource_access_log", { mode: "json" }).$type<Record<string, never> | null>(),
	// How many twins the account has made (terminated ones stay): what MAX_TWINS limits,
	// kept here so that a create counts by one row instead of the account's every twin.
	twins: integer("twins").notNull().default(0),
	// The bytes of the account's docs and of its uploads not yet attached (claimed when a PUT
	// begins): what MAX_DOC_BYTES limits. Only the account's object changes it.
	doc_bytes: integer("doc_bytes").notNull().default(0),
	// How many stickers the account has put and not yet seen removed or expired (swept): what
	// MAX_STICKERS limits, kept here so that a put counts by one row. Only the account's object changes it.
	stickers: integer("stickers").notNull().default(0),
});

export const roles = sqliteTable(
	"roles",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account")
			.notNull()
			.references(() => accounts.uuid),
		name: text("name").notNull(),
		rules: text("rules", { mode: "json" }).$type<RoleRules>().notNull(),
		statement: text("statement", { mode: "json" }).$type<Statement>().notNull(),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [index("roles_account").on(t.account, t.uuid)],
);

export const users = sqliteTable(
	"users",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account")
			.notNull()
			.references(() => accounts.uuid),
		name: text("name").notNull(),
		role: text("role")
			.notNull()
			.references(() => roles.uuid),
		description: text("description", { mode: "json" }).$type<Description>().notNull(),
		// The original's activity logging setting: only null or {} are accepted here.
		activity: text("activity", { mode: "json" }).$type<Record<string, never> | null>(),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [index("users_account").on(t.account, t.uuid), index("users_role").on(t.role)],
);

// At most one secret per user; only its SHA-256 is kept.
export const userSecrets = sqliteTable(
	"user_secrets",
	{
		user: text("user")
			.primaryKey()
			.references(() => users.uuid),
		account: text("account").notNull(),
		hash: text("hash").notNull(),
		fingerprint: text("fingerprint").notNull(),
		validity_ts: real("validity_ts"),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [uniqueIndex("user_secrets_hash").on(t.hash)],
);

// A PIN is redeemed once for a secret. `hash` covers account and PIN together, so the same
// PIN text in two accounts cannot collide.
export const secretPins = sqliteTable(
	"secret_pins",
	{
		hash: text("hash").primaryKey(),
		account: text("account").notNull(),
		user: text("user").notNull(),
		secret_validity_ts: real("secret_validity_ts"),
		expires_ts: real("expires_ts").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [index("secret_pins_user").on(t.user)],
);

export const twins = sqliteTable(
	"twins",
	{
		uuid: text("uuid").primaryKey(),
		owner: text("owner").notNull(),
		status: text("status", { enum: ["alive", "terminated"] }).notNull(),
		description: text("description", { mode: "json" }).$type<Description>().notNull(),
		creation_certificate: text("creation_certificate", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
		termination_certificate: text("termination_certificate", { mode: "json" }).$type<Record<string, unknown>>(),
		updated_ts: real("updated_ts").notNull(),
		// Raised by every write that changes the twin, in that write's own statement: its ETag,
		// which must differ after two writes within one millisecond (updated_ts would not).
		version: integer("version").notNull().default(1),
	},
	// Keyset scans walk an account's twins in uuid order.
	(t) => [index("twins_owner_uuid").on(t.owner, t.uuid)],
);

export type { Description, RoleRules, Statement };

// A webhook subscription. The confirmation token is kept as its SHA-256 (to find the row) and,
// while a confirmation message may still need it, sealed (to build the URL at delivery time).
// Signing keys (client_secret + server_secret) are kept sealed too: messages are signed when
// they are delivered, not when they are queued. See src/base/seal.ts.
export const subscriptions = sqliteTable(
	"subscriptions",
	{
		uuid: text("uuid").primaryKey(),
		// The subscribing account: it owns, lists, manages and counts the subscription.
		account: text("account").notNull(),
		// The account whose topic it is (the subscriber's own, or one that granted it the topic):
		// `subscription.account` in answers and messages, and the confirmation URL's account.
		publisher: text("publisher").notNull(),
		user: text("user").notNull(),
		topic: text("topic").notNull(),
		callback_url: text("callback_url").notNull(),
		token_hash: text("token_hash").notNull(),
		status: text("status", { enum: ["pending", "confirmed", "unsubscribed", "expired", "failed"] }).notNull(),
		validity_ts: real("validity_ts").notNull(),
		// The uuid of the current confirmation message; a resend replaces it, and a queued job
		// naming another one is stale.
		message: text("message").notNull(),
		attempts: integer("attempts").notNull().default(0),
		last_attempt_ts: real("last_attempt_ts"),
		last_outcome: text("last_outcome"),
		// Set once the confirmation was delivered: a redelivered queue message sends nothing more.
		delivered_ts: real("delivered_ts"),
		failure_reason: text("failure_reason"),
		sealed_token: text("sealed_token"),
		sealed_key: text("sealed_key"),
		// The key replaced by the last rotation, still signing alongside the new one until
		// previous_key_until.
		sealed_previous_key: text("sealed_previous_key"),
		previous_key_until: real("previous_key_until"),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
		// When the current confirmation message was issued (by the subscribe or a resend), and
		// how many were issued, each less than a day after the one before, up to it: they count
		// against MAX_SUBSCRIPTIONS until a day after it (see src/db/subscriptions.ts).
		confirmation_ts: real("confirmation_ts").notNull().default(0),
		confirmations: integer("confirmations").notNull().default(0),
		// The latest validity_ts the subscription may ever have, refreshes included: the expiry of
		// the User Token that made it (nothing made with a token outlives it); null when a
		// secret made it.
		lasts_until: real("lasts_until"),
		// The dictionary (DICT) of the webhook_subscribe request: the rules of a subscriber whose
		// role confines it read it when its messages are filtered. Null: none.
		dict: text("dict", { mode: "json" }).$type<Description>(),
	},
	(t) => [
		uniqueIndex("subscriptions_token").on(t.token_hash),
		// The account's listing, in its page order.
		index("subscriptions_account").on(t.account, t.created_ts, t.uuid),
		index("subscriptions_topic").on(t.publisher, t.topic, t.status),
		// What counts against MAX_SUBSCRIPTIONS is found through these two, without reading the
		// account's ended subscriptions.
		index("subscriptions_live").on(t.account, t.status, t.validity_ts),
		index("subscriptions_confirmations").on(t.account, t.confirmation_ts),
		// A grant's change ends the grantee's subscriptions to the granting account's topics,
		// reading those only: not the grantee's others, whose number is none of that account's business.
		index("subscriptions_grantee").on(t.account, t.publisher),
	],
);

// The topics `account` lets `grantee` subscribe to (a JSON array, never empty: revoking them all
// deletes the row).
export const notificationGrants = sqliteTable(
	"notification_grants",
	{
		account: text("account").notNull(),
		grantee: text("grantee").notNull(),
		topics: text("topics", { mode: "json" }).$type<string[]>().notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [primaryKey({ columns: [t.account, t.grantee] })],
);

// The outbox: one row per notification message (trigger, topic, subscription), written in the
// same D1 batch as the ledger change that caused it. The parts of the message are fixed here,
// so every attempt sends the same bytes under the same webhook-id (`message`). `queued_ts` is
// set once the account's object has handed the row to the queue; rows stay a while after, for
// the attempts that read them.
export const notificationOutbox = sqliteTable(
	"notification_outbox",
	{
		message: text("message").primaryKey(),
		account: text("account").notNull(),
		subscription: text("subscription").notNull(),
		trigger: text("trigger").notNull(),
		twin: text("twin").notNull(),
		event: text("event").notNull(),
		subscription_view: text("subscription_view").notNull(),
		sent_ts: real("sent_ts").notNull(),
		queued_ts: real("queued_ts"),
		delivered_ts: real("delivered_ts"),
		// The write's sight (outboxSights): the drain filters the event with it for a subscriber
		// whose role confines it.
		sight: text("sight"),
	},
	(t) => [index("notification_outbox_pending").on(t.account, t.queued_ts)],
);

// The live streams' outbox: one row per (write, trigger) that published, in the same D1 batch
// as the change. `topics` maps each topic to the names of the entries its event holds, whose
// bodies ({new_value, old_value, changed_ts}) are in `entries` once, however many topics share
// them. The account's object hands the rows, in id order (the order they committed), to the
// account's stream object, which numbers them, and then deletes them.
export const streamOutbox = sqliteTable(
	"stream_outbox",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		twin: text("twin").notNull(),
		trigger: text("trigger").notNull(),
		topics: text("topics").notNull(),
		entries: text("entries").notNull(),
		at: real("at").notNull(),
		// The write's sight (outboxSights), by which the stream object filters its messages for a
		// reader whose role confines it.
		sight: text("sight"),
	},
	(t) => [index("stream_outbox_account").on(t.account, t.id)],
);

// What the rules of a reader whose role confines it read of one publishing write (JSON of a
// Sight, rules/reader-filter.ts: the twin, the ledger before and after; a sticker's twin and
// recipients), once per write whatever its fan-out. The stream and webhook outbox rows of the
// write name it; the drain deletes it once no pending row does.
export const outboxSights = sqliteTable(
	"outbox_sights",
	{
		id: text("id").primaryKey(),
		account: text("account").notNull(),
		data: text("data").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [index("outbox_sights_account").on(t.account, t.created_ts)],
);

// Every delivery attempt of every message to a subscription, newest kept (see
// MAX_DELIVERIES_KEPT in src/db/deliveries.ts).
export const webhookDeliveries = sqliteTable(
	"webhook_deliveries",
	{
		seq: integer("seq").primaryKey({ autoIncrement: true }),
		subscription: text("subscription").notNull(),
		message: text("message").notNull(),
		attempt: integer("attempt").notNull(),
		attempted_ts: real("attempted_ts").notNull(),
		outcome: text("outcome", { enum: ["delivered", "retry", "failed"] }).notNull(),
		http_status: integer("http_status"),
		duration_ms: integer("duration_ms").notNull(),
		next_attempt_ts: real("next_attempt_ts"),
		detail: text("detail").notNull(),
	},
	(t) => [index("webhook_deliveries_subscription").on(t.subscription, t.seq)],
);

// An external id (`RFID#...`) an account attached to a twin, whoever owns the twin. The key
// makes it unique per (twin, account) and lists an account's ids on a twin in order. Two
// indexes answer resolve_twin_identity with one lookup: the caller's own ids, and other
// accounts' public ones. The public indexes are partial, so reading other accounts' ids never
// touches, nor counts in Server-Timing, the private ones.
export const twinIdentities = sqliteTable(
	"twin_identities",
	{
		// No foreign key to twins: another account's identities on a twin live in that account's
		// database, the twin in its owner's (docs/scaling.md).
		twin: text("twin").notNull(),
		account: text("account").notNull(),
		identity: text("identity").notNull(),
		validity_ts: real("validity_ts"),
		visibility: text("visibility"),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [
		primaryKey({ columns: [t.twin, t.account, t.identity] }),
		index("twin_identities_identity").on(t.identity, t.account, t.twin),
		index("twin_identities_public").on(t.identity, t.account, t.twin).where(sql`${t.visibility} IS NOT NULL`),
		index("twin_identities_public_twin").on(t.twin, t.account, t.identity).where(sql`${t.visibility} IS NOT NULL`),
	],
);

// Public identities by name, for resolve_twin_identity over every account (docs/scaling.md,
// "What crosses accounts"): a row per (identity, account, twin) whose identity is public, in
// the database SHARDS gives `bucket`, the first byte of the identity's SHA-256, so one lookup in
// one database finds the candidates wherever their accounts live. Written by the attaching
// account's object from directory_outbox; a reader re-reads each candidate where its account
// lives, so a row the outbox has not yet removed hides nothing and shows nothing.
export const identityDirectory = sqliteTable(
	"identity_directory",
	{
		identity: text("identity").notNull(),
		account: text("account").notNull(),
		twin: text("twin").notNull(),
		bucket: integer("bucket").notNull(),
	},
	(t) => [primaryKey({ columns: [t.identity, t.account, t.twin] }), index("identity_directory_bucket").on(t.bucket)],
);

// An account's outbox of directory changes: a row per identity made public ("put") or private
// or deleted ("end"), in the same D1 batch as the identity's own change. The account's object
// applies them in id order (commit order) to identity_directory, by key, and deletes each once
// applied: applying one again changes nothing.
export const directoryOutbox = sqliteTable(
	"directory_outbox",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		identity: text("identity").notNull(),
		twin: text("twin").notNull(),
		change: text("change").$type<"put" | "end">().notNull(),
	},
	(t) => [index("directory_outbox_account").on(t.account, t.id)],
);

// The accounts holding identities on a twin, in the twin owner's database, so that a reader of
// other accounts' identities on it asks only the databases those accounts live in. Written
// before the holder's identities are: a holder listed whose identities are gone costs a
// reader one query and shows nothing.
export const twinHolders = sqliteTable(
	"twin_holders",
	{
		twin: text("twin").notNull(),
		account: text("account").notNull(),
	},
	(t) => [primaryKey({ columns: [t.twin, t.account] })],
);

export type EntryTimeseries = Record<
	string,
	{ measurement?: string; dimensions?: Record<string, string>; timestamp?: string }
>;

// One row per ledger entry: the ledger of `account` on `twin`. `value` is the entry's compact
// JSON text and `size` the bytes the row holds (`"name":value`, and visibility, history,
// publish and timeseries as stored), so the 64 KiB limit, a sum of stored sizes rather than a serialization
// of every entry, bounds what reading a ledger loads.
export const ledgerEntries = sqliteTable(
	"ledger_entries",
	{
		twin: text("twin").notNull(),
		account: text("account").notNull(),
		name: text("name").notNull(),
		value: text("value").notNull(),
		size: integer("size").notNull(),
		visibility: text("visibility"),
		history: text("history"),
		publish: text("publish", { mode: "json" }).$type<Record<string, string>>(),
		// The Timeseries tables the entry's value changes feed, with its templates for each
		// (docs/timeseries.md, "Feeding a table").
		timeseries: text("timeseries", { mode: "json" }).$type<EntryTimeseries>(),
		entry_created_ts: real("entry_created_ts").notNull(),
		entry_updated_ts: real("entry_updated_ts").notNull(),
		value_changed_ts: real("value_changed_ts").notNull(),
	},
	// The account-first index lets an index table's build walk one account's ledgers in twin order.
	(t) => [
		primaryKey({ columns: [t.twin, t.account, t.name] }),
		index("ledger_entries_account_twin").on(t.account, t.twin),
	],
);

// Past values of entries that keep history, newest first by `ts`; pruned on write.
export const ledgerHistory = sqliteTable(
	"ledger_history",
	{
		twin: text("twin").notNull(),
		account: text("account").notNull(),
		name: text("name").notNull(),
		ts: real("ts").notNull(),
		value: text("value").notNull(),
		// The value's size in bytes: a history page adds sizes up through the index below
		// without reading the values (up to 64 KiB each) it will not answer.
		bytes: integer("bytes").notNull().default(0),
	},
	(t) => [
		primaryKey({ columns: [t.twin, t.account, t.name, t.ts] }),
		index("ledger_history_sizes").on(t.twin, t.account, t.name, t.ts, t.bytes),
	],
);

// An upload URL (create_upload_url): the handler, the SHA-256 of its token, and what has come
// through it. `receiving` while a PUT streams the bytes (its length already counted in the
// account's doc_bytes), `uploaded` once they are all in R2 under `object`. Attach deletes the
// row and hands `object` to the doc; expiry and invalidation hand it to doc_garbage.
export const uploads = sqliteTable(
	"uploads",
	{
		handler: text("handler").primaryKey(),
		account: text("account").notNull(),
		user: text("user").notNull(),
		token_hash: text("token_hash").notNull(),
		state: text("state", { enum: ["pending", "receiving", "uploaded"] }).notNull(),
		object: text("object"),
		size: integer("size"),
		hash: text("hash"),
		validity_ts: real("validity_ts").notNull(),
		created_ts: real("created_ts").notNull(),
		// While `receiving`: until when the PUT holds the URL. The PUT renews it as its bytes
		// stream; past it the PUT is taken to have died with its Worker, and the URL is pending
		// again (docs/files.md).
		lease_ts: real("lease_ts"),
		// The PUT's Content-Type, as docs/files.md says it is kept; the attached doc takes it.
		content_type: text("content_type"),
	},
	// Counting an account's live uploads and finding its expired ones read the first index only;
	// finding its dead PUTs the second.
	(t) => [
		index("uploads_account_validity").on(t.account, t.validity_ts),
		index("uploads_account_lease").on(t.account, t.lease_ts),
	],
);

// A file attached to a twin: its bytes are the R2 object `object`. Names are unique per twin
// across accounts; the same index counts a twin's docs and lists them in name order.
export const docs = sqliteTable(
	"docs",
	{
		uuid: text("uuid").primaryKey(),
		twin: text("twin").notNull(),
		name: text("name").notNull(),
		account: text("account").notNull(),
		object: text("object").notNull(),
		size: integer("size").notNull(),
		hash: text("hash").notNull(),
		storage_class: text("storage_class", { enum: ["access_optimized", "cost_optimized"] }).notNull(),
		description: text("description", { mode: "json" }).$type<Description>(),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
		// The media type its download is served with: its upload's Content-Type.
		content_type: text("content_type").notNull().default("application/octet-stream"),
	},
	(t) => [uniqueIndex("docs_twin_name").on(t.twin, t.name), index("docs_twin_account").on(t.twin, t.account)],
);

// R2 objects no row refers to any more, written in the same batch that let go of them; the
// account's object deletes them from R2 and then the row, retrying from its alarm.
export const docGarbage = sqliteTable(
	"doc_garbage",
	{
		object: text("object").primaryKey(),
		account: text("account").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [index("doc_garbage_account").on(t.account, t.created_ts)],
);

// A doc write whose rows have two homes (docs/files.md "Docs on another database"): the
// account attached, or removed, docs on a twin whose owner's database is not its own. The row
// commits in the writing account's database with the write's own changes there, and stands
// for the change still to be made in the twin's database; the account's object makes it, in
// id order (the order the rows committed), finishes the write in its own database and deletes
// the row in that same batch. `payload` holds everything the change and its undo need.
export const docOutbox = sqliteTable(
	"doc_outbox",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		twin: text("twin").notNull(),
		kind: text("kind", { enum: ["attach", "remove"] }).notNull(),
		payload: text("payload").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [index("doc_outbox_account").on(t.account, t.id)],
);

// An Indexes table: a typed view of one account's own ledgers (docs/indexes.md). `generation`
// changes on a rebuild or truncate: rows of older generations are invisible at once and deleted
// in the background. `rows` and `table_size` count the current generation; only the account's
// object writes them, in the same batch as the rows.
export type IndexDefinition = {
	rule: string;
	properties: { names: string[]; types: string[] };
	templates: { properties: Record<string, string> };
};

export const indexTables = sqliteTable(
	"index_tables",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account").notNull(),
		name: text("name").notNull(),
		rule: text("rule").notNull(),
		properties: text("properties", { mode: "json" }).$type<IndexDefinition["properties"]>().notNull(),
		templates: text("templates", { mode: "json" }).$type<IndexDefinition["templates"]>().notNull(),
		generation: integer("generation").notNull(),
		status: text("status", { enum: ["building", "ready", "full"] }).notNull(),
		rows: integer("rows").notNull().default(0),
		table_size: integer("table_size").notNull().default(0),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [uniqueIndex("index_tables_account_name").on(t.account, t.name)],
);

// One row per twin whose ledger passes the table's rule: its properties as compact JSON, in
// the order of the table's names. Keyed for the query's walk in twin order.
export const indexRows = sqliteTable(
	"index_rows",
	{
		table: text("table").notNull(),
		generation: integer("generation").notNull(),
		twin: text("twin").notNull(),
		properties: text("properties").notNull(),
		size: integer("size").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [primaryKey({ columns: [t.table, t.generation, t.twin] })],
);

// A coloured marker an account puts on a twin for its recipients. Nothing changes a sticker:
// it is put, then removed or expired, once. `publish` holds the topics of each event as lists,
// `recipients` the uuids in the order given.
export const stickers = sqliteTable(
	"stickers",
	{
		twin: text("twin").notNull(),
		account: text("account").notNull(),
		color: text("color").notNull(),
		note: text("note"),
		recipients: text("recipients", { mode: "json" }).$type<string[]>().notNull(),
		validity_ts: real("validity_ts").notNull(),
		created_ts: real("created_ts").notNull(),
		publish: text("publish", { mode: "json" })
			.$type<Partial<Record<"on_put" | "on_remove" | "on_expire", string[]>>>()
			.notNull(),
	},
	(t) => [primaryKey({ columns: [t.twin, t.account, t.color] }), index("stickers_due").on(t.account, t.validity_ts)],
);

// Who a sticker is addressed to: one row per recipient uuid (a user, a role or an account),
// in the database that uuid names, for the reads that find a caller's stickers on a twin and
// across twins, newest first. A recipient in the putting account's database gets its row in the
// put's batch; any other gets a copy the putting account's object writes from sticker_copies
// (docs/stickers.md "Across databases"). Each row carries what the reads answer (note,
// validity_ts, created_ts: a sticker never changes), so a read asks the caller's database only.
// Each read walks one index range per address that holds only the entries it may answer, newest
// first, so that it stops after what it answers whatever else is addressed to the caller
// (docs/stickers.md "Who sees a sticker"): an index for each filter the reads take (the twin, the putting
// account, the color).
export const stickerRecipients = sqliteTable(
	"sticker_recipients",
	{
		recipient: text("recipient").notNull(),
		twin: text("twin").notNull(),
		account: text("account").notNull(),
		color: text("color").notNull(),
		created_ts: real("created_ts").notNull(),
		note: text("note"),
		// The sticker's; the migration that added it filled in the rows before it from their stickers.
		validity_ts: real("validity_ts").notNull().default(0),
	},
	(t) => [
		primaryKey({ columns: [t.twin, t.account, t.color, t.recipient] }),
		// get_stickers: the stickers on a twin, of any account or of one.
		index("sticker_recipients_twin").on(t.recipient, t.twin, t.created_ts, t.account, t.color),
		index("sticker_recipients_twin_account").on(t.recipient, t.twin, t.account, t.created_ts, t.color),
		// list_stickers: across twins, of any account or of one, of any color or of one.
		index("sticker_recipients_newest").on(t.recipient, t.created_ts, t.account, t.twin, t.color),
		index("sticker_recipients_account").on(t.recipient, t.account, t.created_ts, t.twin, t.color),
		index("sticker_recipients_color").on(t.recipient, t.color, t.created_ts, t.account, t.twin),
		index("sticker_recipients_account_color").on(t.recipient, t.account, t.color, t.created_ts, t.twin),
	],
);

// The putting account's outbox of recipient copies (docs/stickers.md "Across databases"): one row
// per sticker put or ended that has recipients in other databases, in the same D1 batch as the
// sticker's own rows. The account's object applies the rows in id order (the order they
// committed) to the databases their recipients name, by key (twin, account, color, recipient),
// and deletes each once applied: applying one again changes nothing.
export const stickerCopies = sqliteTable(
	"sticker_copies",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		twin: text("twin").notNull(),
		color: text("color").notNull(),
		// "put" writes the copies, "end" deletes them.
		change: text("change").$type<"put" | "end">().notNull(),
		// The recipients outside the putting account's database.
		recipients: text("recipients", { mode: "json" }).$type<string[]>().notNull(),
		note: text("note"),
		validity_ts: real("validity_ts").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [index("sticker_copies_account").on(t.account, t.id)],
);

// What background work could not do, per account (get_log): written by alarms, queue
// consumers and delivery objects, never read on a request's path but by get_log.
export const accountLog = sqliteTable(
	"account_log",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		at: real("at").notNull(),
		message: text("message").notNull(),
	},
	(t) => [index("account_log_account").on(t.account, t.id)],
);

// Idempotency-Key records (POST and PATCH): a key claimed by the request that runs it (its
// trace), then its answer as it was sent, replayed to the same request within 24 hours.
// `status` is null while the first request runs.
export const idempotencyKeys = sqliteTable(
	"idempotency_keys",
	{
		account: text("account").notNull(),
		key: text("key").notNull(),
		fingerprint: text("fingerprint").notNull(),
		trace: text("trace").notNull(),
		status: integer("status"),
		content_type: text("content_type"),
		body: text("body"),
		// The kept body's UTF-8 size, counted in the account's quota.
		bytes: integer("bytes").notNull().default(0),
		created_ts: real("created_ts").notNull(),
		// The kept answer's ETag, replayed with it.
		etag: text("etag"),
	},
	(t) => [primaryKey({ columns: [t.account, t.key] }), index("idempotency_keys_age").on(t.account, t.created_ts)],
);

// What an account's kept answers hold (docs/operations.md "Idempotent requests"): the answered
// keys and their bodies' bytes, kept as the keys are settled and pruned, so that a claim
// checks the quota with one row rather than a count of every key.
export const idempotencyQuota = sqliteTable("idempotency_quota", {
	account: text("account").primaryKey(),
	keys: integer("keys").notNull(),
	bytes: integer("bytes").notNull(),
});

// An OpenID Connect issuer an account trusts to sign its users in (docs/sign-in.md). Its keys
// are a JWK Set kept here (`jwks`, public keys only) or fetched from `jwks_uri`; the role
// `provisioning_role` names is held by it (a role it names cannot be deleted). `updated_ts`
// binds the tokens an exchange gave: any change to the provider ends them.
export const identityProviders = sqliteTable(
	"identity_providers",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account").notNull(),
		issuer: text("issuer").notNull(),
		audiences: text("audiences", { mode: "json" }).$type<string[]>().notNull(),
		algorithms: text("algorithms", { mode: "json" }).$type<string[]>().notNull(),
		jwks_uri: text("jwks_uri"),
		jwks: text("jwks", { mode: "json" }).$type<{ keys: Record<string, unknown>[] }>(),
		clock_skew: integer("clock_skew").notNull(),
		subject_claim: text("subject_claim").notNull(),
		dict_claims: text("dict_claims", { mode: "json" }).$type<Record<string, string>>().notNull(),
		provisioning_role: text("provisioning_role"),
		provisioning_name_claim: text("provisioning_name_claim"),
		token_validity: integer("token_validity").notNull(),
		exp_extension: integer("exp_extension").notNull(),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [
		uniqueIndex("identity_providers_issuer").on(t.account, t.issuer),
		// Lookups by (account, uuid) go through it: another account's provider reads as none.
		index("identity_providers_account").on(t.account, t.uuid),
		index("identity_providers_role").on(t.provisioning_role),
	],
);

// Which user a provider's subject is: one user per (provider, subject), one subject per (user,
// provider). The uuid binds the tokens an exchange gave through it, so a link deleted and made
// again does not revive them.
export const userExternalIds = sqliteTable(
	"user_external_ids",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account").notNull(),
		user: text("user").notNull(),
		provider: text("provider").notNull(),
		subject: text("subject").notNull(),
		created_ts: real("created_ts").notNull(),
	},
	(t) => [
		uniqueIndex("user_external_ids_subject").on(t.provider, t.subject),
		uniqueIndex("user_external_ids_user").on(t.user, t.provider),
	],
);

// A bucket moving between databases (docs/scaling.md, "Moving a bucket"): one row per moving
// bucket, written on every shard so that the credential query of any request reads it in the
// database it already asks (no round trip of its own). `prefix` is the bucket as the first two
// hex digits of its ids. While a row exists, writes to the bucket's rows answer 503241.
export const bucketMoves = sqliteTable("bucket_moves", {
	bucket: integer("bucket").primaryKey(),
	prefix: text("prefix").notNull().unique(),
	source: text("source").notNull(),
	target: text("target").notNull(),
	state: text("state", { enum: ["copying", "copied", "finishing", "aborting"] }).notNull(),
	started_ts: real("started_ts").notNull(),
});

// Never holds a row. A guard of the account's object (db/write-facts.ts) inserts into it, in the
// same D1 batch as a write, only when a fact the write rests on is no longer as the object read
// it; the CHECK refuses that insert, and with it the whole batch rolls back.
export const writeGuards = sqliteTable("write_guards", { held: integer("held").notNull() }, (t) => [
	check("write_guards_held", sql`${t.held} = 1`),
]);

// A Timeseries table (docs/timeseries.md): the definition of a history of ledger values. Its
// points live in chunk objects (TimeseriesDO), one per (table, generation, chunk start).
// `generation` changes on a truncate: older points are invisible at once and their objects
// emptied in the background. `rows` and `table_size` count the current generation's committed,
// unexpired, undropped points; the account's object adds to them in the batch of the ledger
// write that makes them. `building`: rollup steps an update added, filled from raw points.
export type TimeseriesDefinition = {
	dimensions: { names: string[]; types: string[] };
	measurements: { names: string[]; types: string[] };
	defaults: { measurement?: string; dimensions?: Record<string, string>; timestamp?: string } | null;
	retention: string;
	chunk: string;
	rollups: { step: string; retention: string }[];
};

export const timeseriesTables = sqliteTable(
	"timeseries_tables",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account").notNull(),
		name: text("name").notNull(),
		dimensions: text("dimensions", { mode: "json" }).$type<TimeseriesDefinition["dimensions"]>().notNull(),
		measurements: text("measurements", { mode: "json" }).$type<TimeseriesDefinition["measurements"]>().notNull(),
		defaults: text("defaults", { mode: "json" }).$type<TimeseriesDefinition["defaults"]>(),
		retention: text("retention").notNull(),
		chunk: text("chunk").notNull(),
		rollups: text("rollups", { mode: "json" }).$type<TimeseriesDefinition["rollups"]>().notNull(),
		building: text("building", { mode: "json" }).$type<string[]>().notNull(),
		// Each measurement's name in the chunk objects: its own, or for one an update added, the
		// name with the time it was added, so that points of a measurement removed and added
		// again are never answered as the new one's.
		keys: text("keys", { mode: "json" }).$type<Record<string, string>>().notNull().default({}),
		generation: integer("generation").notNull(),
		status: text("status", { enum: ["building", "ready", "full"] }).notNull(),
		rows: integer("rows").notNull().default(0),
		table_size: integer("table_size").notNull().default(0),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
	},
	(t) => [uniqueIndex("timeseries_tables_account_name").on(t.account, t.name)],
);

// Points a ledger write committed, until their chunk objects hold them; and points it dropped
// (`dropped` the reason), until the account log says so. Written in the ledger write's batch, so
// a point exists exactly when its change does. (seq, entry, table) is the point's key in its
// chunk object: a redelivery stores nothing twice.
export const timeseriesOutbox = sqliteTable(
	"timeseries_outbox",
	{
		id: integer("id").primaryKey({ autoIncrement: true }),
		account: text("account").notNull(),
		table: text("table").notNull(),
		generation: integer("generation").notNull(),
		seq: integer("seq").notNull(),
		entry: text("entry").notNull(),
		twin: text("twin").notNull(),
		ts: real("ts"),
		dims: text("dims").notNull(),
		measurement: text("measurement"),
		value: text("value").notNull(),
		bytes: integer("bytes").notNull(),
		dropped: text("dropped"),
		at: real("at").notNull(),
	},
	(t) => [index("timeseries_outbox_account").on(t.account, t.id)],
);

// The chunks of a table's generation that hold points: a query reads those its range meets, and
// truncate and delete find the objects to empty here.
export const timeseriesChunks = sqliteTable(
	"timeseries_chunks",
	{
		table: text("table").notNull(),
		generation: integer("generation").notNull(),
		start: real("start").notNull(),
		account: text("account").notNull(),
	},
	(t) => [
		primaryKey({ columns: [t.table, t.generation, t.start] }),
		index("timeseries_chunks_account").on(t.account, t.table, t.generation),
	],
);

// Batches and exports (docs/batches.md): one row per job, written by the account's object when
// the job is made and by the job's own object (BatchDO) as it runs, one update per step. Get, list
// and the account's limits read it; the job's lines, offsets and answers live in its object.
// `record` holds what the API's record shows beyond these columns (hash, description, the match
// and template, contents, progress, errors, stopped, files), as the API shows it.
export const jobs = sqliteTable(
	"jobs",
	{
		uuid: text("uuid").primaryKey(),
		account: text("account").notNull(),
		user: text("user").notNull(),
		kind: text("kind", { enum: ["batch", "export"] }).notNull(),
		// A batch's operation; null for an export.
		operation: text("operation"),
		status: text("status").notNull(),
		record: text("record", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
		// The R2 key of a file batch's input (the upload it consumed); null otherwise.
		input: text("input"),
		created_ts: real("created_ts").notNull(),
		updated_ts: real("updated_ts").notNull(),
		expires_ts: real("expires_ts"),
	},
	(t) => [index("jobs_account_created").on(t.account, t.created_ts, t.uuid)],
);

// A batch line whose write committed: inserted in the line's own D1 batch, so that the line's
// write and this row commit together or not at all. A second run of the line fails on the key
// and rolls its write back: a line writes exactly once across retries and restarts. Kept until
// the job is deleted.
export const jobLines = sqliteTable(
	"job_lines",
	{
		job: text("job").notNull(),
		line: integer("line").notNull(),
		trace: text("trace").notNull(),
		at: real("at").notNull(),
	},
	(t) => [primaryKey({ columns: [t.job, t.line] })],
);

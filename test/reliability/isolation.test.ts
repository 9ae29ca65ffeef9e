import { describe, expect, it } from "vitest";
import { OPERATION_NAMES } from "../../src/policy/names";
import { IdentityProvider } from "../federation/identity-provider";
import { call, fingerprint } from "../support/requests";
import {
	type Account,
	bootstrap,
	bootstrapOn,
	createUser,
	issueSecret,
	member,
	role,
	type Statement,
} from "../support/accounts";
import { pathOf, subscribeRecording } from "../support/webhooks";
import { absentIdentityLike, idOf } from "../support/shards";
import { warmWriter } from "../support/ledgers";
import { newTwin } from "../support/twins";
import { runJob } from "../jobs/helpers";

// For every operation: the second account's credentials (or paths) with the first account's
// ids, tokens and cursors. The answer is a refusal, and none of the first account's data.

type World = {
	first: Account;
	second: Account;
	firstUser: string;
	firstUserSecret: string;
	firstTwin: string;
	firstCursor: string;
	firstPin: string;
	firstToken: string;
	firstSubscription: string;
	firstIdentity: string;
	secondTwin: string;
	// A User Token of the second account's administrator: a token acts as its user, no more.
	secondToken: string;
	// The first account's upload URL (pending), and a download URL of its doc on its twin.
	firstHandler: string;
	firstUploadToken: string;
	firstDownload: string;
	// Identity providers of each account, the first's linked to firstUser, and an ID token of
	// each for its linked subject.
	firstProvider: string;
	secondProvider: string;
	firstIdToken: string;
	secondIdToken: string;
	secondJwks: { keys: unknown[] };
	// A batch of the first account that has completed, the handler of its results URL, and an
	// export of the first account.
	firstBatch: string;
	firstFile: string;
	firstExport: string;
};

type Attempt = {
	method: string;
	path: string;
	body?: unknown;
	secret?: string;
	headers?: Record<string, string>;
	expect: number[];
};

// An Indexes table over the first account's entries (the first account defines it as first_index).
const INDEX = {
	rule: "LEDGER.first_entry != null",
	properties: { names: ["value"], types: ["string"] },
	templates: { properties: { value: "{LEDGER[first_entry]}" } },
};

// A Timeseries table the first account defines as first_series.
const SERIES = { dimensions: { names: [], types: [] }, measurements: { names: ["first_entry"], types: ["text"] } };

const ATTEMPTS: Record<string, (w: World) => Attempt[]> = {
	who_am_i: (w) => [{ method: "GET", path: "/whoami", secret: w.second.secret, expect: [200] }],
	get_account: (w) => [{ method: "GET", path: "/account", secret: w.second.secret, expect: [200] }],
	update_account: (w) => [
		{ method: "PATCH", path: "/account", body: { resource_access_log: null }, secret: w.second.secret, expect: [200] },
	],
	trace: (w) => [{ method: "POST", path: "/trace", secret: w.second.secret, expect: [201] }],
	create_user_token: (w) => [{ method: "POST", path: "/token", body: {}, secret: w.second.secret, expect: [201] }],
	refresh_user_token: (w) => [
		{ method: "POST", path: "/token/refresh", body: {}, secret: w.secondToken, expect: [403] },
	],
	create_user: (w) => [
		{ method: "POST", path: "/users", body: { name: "x", role: w.first.role }, secret: w.second.secret, expect: [404] },
	],
	get_users: (w) => [{ method: "GET", path: "/users", secret: w.second.secret, expect: [200] }],
	get_user: (w) => [{ method: "GET", path: `/users/${w.firstUser}`, secret: w.second.secret, expect: [404] }],
	update_user: (w) => [
		{
			method: "PATCH",
			path: `/users/${w.firstUser}`,
			body: { name: "stolen" },
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "PATCH",
			path: `/users/${w.second.user}`,
			body: { role: w.first.role },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_user: (w) => [{ method: "DELETE", path: `/users/${w.firstUser}`, secret: w.second.secret, expect: [404] }],
	create_user_secret_pin: (w) => [
		{ method: "POST", path: `/users/${w.firstUser}/secrets`, body: {}, secret: w.second.secret, expect: [404] },
	],
	create_user_secret: (w) => [{ method: "POST", path: `/secrets/${w.second.account}/${w.firstPin}`, expect: [404] }],
	get_user_secret: (w) => [
		{ method: "GET", path: `/users/${w.firstUser}/secrets`, secret: w.second.secret, expect: [404] },
		{ method: "GET", path: `/users/${w.first.user}/secrets`, secret: w.second.secret, expect: [404] },
	],
	update_user_secret: (w) => [
		{
			method: "PATCH",
			path: `/users/${w.firstUser}/secrets`,
			body: { validity_ts: 1 },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_user_secret: (w) => [
		{ method: "DELETE", path: `/users/${w.firstUser}/secrets`, secret: w.second.secret, expect: [404] },
	],
	create_user_role: (w) => [
		{ method: "POST", path: "/roles", body: { name: "Mine" }, secret: w.second.secret, expect: [201] },
	],
	get_user_roles: (w) => [{ method: "GET", path: "/roles", secret: w.second.secret, expect: [200] }],
	get_user_role: (w) => [{ method: "GET", path: `/roles/${w.first.role}`, secret: w.second.secret, expect: [404] }],
	update_user_role: (w) => [
		{
			method: "PATCH",
			path: `/roles/${w.first.role}`,
			body: { name: "Stolen" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_user_role: (w) => [
		{ method: "DELETE", path: `/roles/${w.first.role}`, secret: w.second.secret, expect: [404] },
	],
	create_twin: (w) => [{ method: "POST", path: "/twins", body: {}, secret: w.second.secret, expect: [201] }],
	scan_twins: (w) => [
		{ method: "GET", path: "/twins?details=true", secret: w.second.secret, expect: [200] },
		{ method: "GET", path: `/twins?count=1&cursor=${w.firstCursor}`, secret: w.second.secret, expect: [400] },
		{
			method: "GET",
			path: `/twins?details=true&match=${encodeURIComponent(`owner == '${w.first.account}'`)}`,
			secret: w.second.secret,
			expect: [200],
		},
	],
	get_twin: (w) => [
		{ method: "GET", path: `/twins/${w.firstTwin}`, secret: w.second.secret, expect: [404] },
		{ method: "GET", path: `/twins/${w.firstTwin}`, secret: w.secondToken, expect: [404] },
	],
	update_twin: (w) => [
		{
			method: "PATCH",
			path: `/twins/${w.firstTwin}`,
			body: { description: {} },
			secret: w.second.secret,
			expect: [404],
		},
	],
	terminate_twin: (w) => [{ method: "DELETE", path: `/twins/${w.firstTwin}`, secret: w.second.secret, expect: [404] }],
	create_twin_identity: (w) => [
		{
			method: "POST",
			path: `/twins/${w.firstTwin}/identities`,
			body: { identities: { "X#1": {} } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_twin_identities: (w) => [
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/identities?show_foreign=true`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_twin_identity: (w) => [
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/identities/${w.firstIdentity}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	update_twin_identity: (w) => [
		{
			method: "PATCH",
			path: `/twins/${w.firstTwin}/identities/${w.firstIdentity}`,
			body: { validity_ts: 1 },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_twin_identity: (w) => [
		{
			method: "DELETE",
			path: `/twins/${w.firstTwin}/identities/${w.firstIdentity}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	// The first account's identity is public, but the second's role has no identity rule.
	resolve_twin_identity: (w) => [
		{
			method: "GET",
			path: `/resolve/${w.firstIdentity}?context=system&details=true`,
			secret: w.second.secret,
			expect: [200],
		},
		{
			method: "GET",
			path: `/resolve/${w.firstIdentity}?context=${w.first.account}`,
			secret: w.second.secret,
			expect: [200],
		},
	],
	add_twin_ledger_entry: (w) => [
		{
			method: "POST",
			path: `/twins/${w.firstTwin}/ledgers/personal`,
			body: { entries: { x: { value: 1 } } },
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "POST",
			path: `/twins/${w.secondTwin}/ledgers/${w.first.account}`,
			body: { entries: { x: { value: 1 } } },
			secret: w.second.secret,
			expect: [403],
		},
	],
	get_twin_ledger_entry: (w) => [
		{ method: "GET", path: `/twins/${w.firstTwin}/ledgers/${w.first.account}`, secret: w.second.secret, expect: [404] },
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/ledgers/owner?entries=first_entry`,
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "GET",
			path: `/twins/${w.secondTwin}/ledgers/${w.first.account}`,
			secret: w.second.secret,
			expect: [200],
		},
	],
	update_twin_ledger_entry: (w) => [
		{
			method: "PATCH",
			path: `/twins/${w.firstTwin}/ledgers/${w.first.account}`,
			body: { entries: { first_entry: { value: 2 } } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_twin_ledger_entry: (w) => [
		{
			method: "DELETE",
			path: `/twins/${w.firstTwin}/ledgers/personal?entries=first_entry`,
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "DELETE",
			path: `/twins/${w.secondTwin}/ledgers/${w.first.account}`,
			secret: w.second.secret,
			expect: [403],
		},
	],
	get_twin_ledger_entry_value: (w) => [
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/ledgers/${w.first.account}/value`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	update_twin_ledger_entry_value: (w) => [
		{
			method: "PATCH",
			path: `/twins/${w.firstTwin}/ledgers/personal/value`,
			body: { entries: { first_entry: { value: 2 } } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_twin_ledger_entry_history: (w) => [
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/ledgers/creator/history?entries=first_entry`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	webhook_subscribe: (w) => [
		{
			method: "POST",
			path: "/notifications/webhooks",
			body: { topic: "abc", callback_url: "https://example.com/" },
			secret: w.second.secret,
			expect: [201],
		},
		// The first account granted the second "granted-topic" only.
		{
			method: "POST",
			path: "/notifications/webhooks",
			body: { topic: "abc", account: w.first.account, callback_url: "https://example.com/" },
			secret: w.second.secret,
			expect: [403],
		},
	],
	// Grants are the caller's account's own: the second revoking what it grants the first leaves
	// the first's grant to the second as it was, and the second's list shows only its own.
	update_notifications_account_access: (w) => [
		{
			method: "PATCH",
			path: `/notifications/webhooks/access/accounts/${w.first.account}`,
			body: { topics: [] },
			secret: w.second.secret,
			expect: [200],
		},
	],
	get_notifications_access: (w) => [
		{ method: "GET", path: "/notifications/webhooks/access", secret: w.second.secret, expect: [200] },
	],
	confirm_a_webhook_subscription: (w) => [
		{ method: "GET", path: `/notifications/webhooks/${w.second.account}?token=${w.firstToken}`, expect: [404] },
	],
	webhook_refresh_subscription: (w) => [
		{
			method: "PATCH",
			path: `/notifications/webhooks/${w.second.account}?token=${w.firstToken}`,
			body: {},
			expect: [404],
		},
	],
	webhook_unsubscribe: (w) => [
		{ method: "DELETE", path: `/notifications/webhooks/${w.second.account}?token=${w.firstToken}`, expect: [404] },
	],
	get_webhook_subscriptions: (w) => [
		{ method: "GET", path: "/notifications/webhooks", secret: w.second.secret, expect: [200] },
		{ method: "GET", path: "/notifications/webhooks?topic=twins", secret: w.second.secret, expect: [200] },
	],
	get_webhook_subscription: (w) => [
		{
			method: "GET",
			path: `/notifications/webhooks/subscriptions/${w.firstSubscription}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_webhook_deliveries: (w) => [
		{
			method: "GET",
			path: `/notifications/webhooks/subscriptions/${w.firstSubscription}/deliveries`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	resend_webhook_confirmation: (w) => [
		{
			method: "POST",
			path: `/notifications/webhooks/subscriptions/${w.firstSubscription}/confirmation`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_webhook_subscription: (w) => [
		{
			method: "DELETE",
			path: `/notifications/webhooks/subscriptions/${w.firstSubscription}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	create_upload_url: (w) => [{ method: "POST", path: "/cache", secret: w.second.secret, expect: [201] }],
	invalidate_upload_url: (w) => [
		{ method: "DELETE", path: `/cache/${w.firstHandler}`, secret: w.second.secret, expect: [404] },
	],
	upload_to_cache: (w) => [
		{
			method: "PUT",
			path: `/cache/${w.second.account}/${w.firstHandler}?token=${w.firstUploadToken}`,
			body: "bytes",
			headers: { "content-length": "5" },
			expect: [404],
		},
	],
	attach_twin_doc: (w) => [
		{
			method: "POST",
			path: `/twins/${w.firstTwin}/docs`,
			body: { docs: { "x.txt": { handler: w.firstHandler } } },
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "POST",
			path: `/twins/${w.secondTwin}/docs`,
			body: { docs: { "x.txt": { handler: w.firstHandler } } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_twin_docs: (w) => [
		{ method: "GET", path: `/twins/${w.firstTwin}/docs?view=tree`, secret: w.second.secret, expect: [404] },
	],
	delete_twin_docs: (w) => [
		{ method: "DELETE", path: `/twins/${w.firstTwin}/docs`, secret: w.second.secret, expect: [404] },
	],
	get_twin_doc: (w) => [
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/docs/first-doc.txt?download=true`,
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "GET",
			path: `/twins/${w.firstTwin}/docs/first-doc.txt?validity_ts=x`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	update_twin_doc: (w) => [
		{
			method: "PATCH",
			path: `/twins/${w.firstTwin}/docs/first-doc.txt`,
			body: { description: {} },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_twin_doc: (w) => [
		{ method: "DELETE", path: `/twins/${w.firstTwin}/docs/first-doc.txt`, secret: w.second.secret, expect: [404] },
	],
	// The first account's download URL, presented under the second account's path.
	download_doc: (w) => [{ method: "GET", path: `/download/${w.second.account}/${w.firstDownload}`, expect: [404] }],
	create_batch: (w) => [
		{
			method: "POST",
			path: "/batches",
			body: { operation: "create_twin", handler: w.firstHandler },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_batches: (w) => [{ method: "GET", path: "/batches", secret: w.second.secret, expect: [200] }],
	get_batch: (w) => [{ method: "GET", path: `/batches/${w.firstBatch}`, secret: w.second.secret, expect: [404] }],
	update_batch: (w) => [
		{
			method: "PATCH",
			path: `/batches/${w.firstBatch}`,
			body: { status: "cancel" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_batch: (w) => [{ method: "DELETE", path: `/batches/${w.firstBatch}`, secret: w.second.secret, expect: [404] }],
	create_export: (w) => [{ method: "POST", path: "/exports", body: {}, secret: w.second.secret, expect: [201] }],
	get_exports: (w) => [{ method: "GET", path: "/exports", secret: w.second.secret, expect: [200] }],
	get_export: (w) => [{ method: "GET", path: `/exports/${w.firstExport}`, secret: w.second.secret, expect: [404] }],
	update_export: (w) => [
		{
			method: "PATCH",
			path: `/exports/${w.firstExport}`,
			body: { status: "cancel" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_export: (w) => [
		{ method: "DELETE", path: `/exports/${w.firstExport}`, secret: w.second.secret, expect: [404] },
	],
	download_file: (w) => [{ method: "GET", path: `/files/${w.second.account}/${w.firstFile}`, expect: [404] }],
	create_indexes_table: (w) => [
		{
			method: "POST",
			path: "/account/services/indexes",
			body: { indexes: { first_table: INDEX } },
			secret: w.second.secret,
			expect: [201],
		},
	],
	get_indexes_tables: (w) => [
		{ method: "GET", path: "/account/services/indexes", secret: w.second.secret, expect: [200] },
	],
	get_indexes_table: (w) => [
		{ method: "GET", path: "/account/services/indexes/first_index", secret: w.second.secret, expect: [404] },
	],
	update_indexes_table: (w) => [
		{
			method: "PATCH",
			path: "/account/services/indexes/first_index",
			body: { rule: "false" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_indexes_table: (w) => [
		{ method: "DELETE", path: "/account/services/indexes/first_index", secret: w.second.secret, expect: [404] },
	],
	truncate_indexes_table: (w) => [
		{ method: "DELETE", path: "/account/services/indexes/first_index/data", secret: w.second.secret, expect: [404] },
	],
	create_timeseries_table: (w) => [
		{
			method: "POST",
			path: "/account/services/timeseries",
			body: { timeseries: { second_series: SERIES } },
			secret: w.second.secret,
			expect: [201],
		},
	],
	get_timeseries_tables: (w) => [
		{ method: "GET", path: "/account/services/timeseries", secret: w.second.secret, expect: [200] },
	],
	get_timeseries_table: (w) => [
		{ method: "GET", path: "/account/services/timeseries/first_series", secret: w.second.secret, expect: [404] },
	],
	update_timeseries_table: (w) => [
		{
			method: "PATCH",
			path: "/account/services/timeseries/first_series",
			body: { retention: "1D" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_timeseries_table: (w) => [
		{ method: "DELETE", path: "/account/services/timeseries/first_series", secret: w.second.secret, expect: [404] },
	],
	truncate_timeseries_table: (w) => [
		{
			method: "DELETE",
			path: "/account/services/timeseries/first_series/data",
			secret: w.second.secret,
			expect: [404],
		},
	],
	query_timeseries_table: (w) => [
		{
			method: "GET",
			path: "/account/services/timeseries/first_series/data?ge=0&le=1",
			secret: w.second.secret,
			expect: [404],
		},
	],
	query_indexes_table: (w) => [
		{
			method: "GET",
			path: "/account/services/indexes/first_index/data?count=10",
			secret: w.second.secret,
			expect: [404],
		},
	],
	// The first account's topic, not granted to the second: refused before any stream opens,
	// exactly as for an account that exists nowhere.
	stream_notifications: (w) => [
		{
			method: "GET",
			path: `/notifications/stream?topics=first-topic&account=${w.first.account}`,
			secret: w.second.secret,
			expect: [403],
		},
		{
			method: "GET",
			path: `/notifications/stream?topics=granted-topic,first-topic&account=${w.first.account}`,
			secret: w.second.secret,
			expect: [403],
		},
	],
	create_stream_token: (w) => [
		{ method: "POST", path: "/notifications/stream/tokens", body: {}, secret: w.second.secret, expect: [201] },
	],
	// The first account's sticker on its twin is addressed to the second account, which cannot
	// see the twin: it answers as no sticker, on no twin.
	put_sticker: (w) => [
		{
			method: "POST",
			path: `/twins/${w.firstTwin}/stickers`,
			body: { stickers: { "first-color": { recipients: [w.second.user] } } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_sticker: (w) => [
		{ method: "GET", path: `/twins/${w.firstTwin}/stickers/first-color`, secret: w.second.secret, expect: [404] },
	],
	get_stickers: (w) => [
		{ method: "GET", path: `/twins/${w.firstTwin}/stickers`, secret: w.second.secret, expect: [404] },
		{
			method: "GET",
			path: `/twins/${w.secondTwin}/stickers?context=${w.first.account}`,
			secret: w.second.secret,
			expect: [200],
		},
	],
	remove_sticker: (w) => [
		{
			method: "DELETE",
			path: `/twins/${w.firstTwin}/stickers/first-color?context=${w.first.account}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	list_stickers: (w) => [
		{ method: "GET", path: `/stickers?context=${w.first.account}`, secret: w.second.secret, expect: [200] },
		{ method: "GET", path: "/stickers?context=system&color=first-color", secret: w.second.secret, expect: [200] },
	],
	get_log: (w) => [{ method: "GET", path: "/log", secret: w.second.secret, expect: [200] }],
	// The second account's own usage; the first account's users are unknown to it.
	get_account_usage: (w) => [{ method: "GET", path: "/usage?bucket=day", secret: w.second.secret, expect: [200] }],
	get_user_usage: (w) => [
		{ method: "GET", path: `/usage/${w.firstUser}`, secret: w.second.secret, expect: [404] },
		{ method: "GET", path: `/usage/${w.first.user}?bucket=day`, secret: w.second.secret, expect: [404] },
	],
	// Not an account's operation: the admin token makes a new account, it reads none.
	create_account: () => [],
	// The administrator's routes, like create_account: no account's credential reaches them.
	get_shards: (w) => [{ method: "GET", path: "/admin/shards", secret: w.second.secret, expect: [401] }],
	create_shard_move: (w) => [
		{
			method: "POST",
			path: "/admin/shards/moves",
			secret: w.second.secret,
			body: { bucket: 1, to: "DB_1" },
			expect: [401],
		},
	],
	get_shard_move: (w) => [{ method: "GET", path: "/admin/shards/moves/1", secret: w.second.secret, expect: [401] }],
	delete_shard_move: (w) => [
		{ method: "DELETE", path: "/admin/shards/moves/1", secret: w.second.secret, expect: [401] },
	],
	// The second account's own provider may trust the first's issuer; it may not provision with
	// the first account's role.
	create_identity_provider: (w) => [
		{
			method: "POST",
			path: "/account/identity-providers",
			body: { issuer: "https://first-issuer.example.com/", audiences: ["x"], jwks: w.secondJwks },
			secret: w.second.secret,
			expect: [201],
		},
		{
			method: "POST",
			path: "/account/identity-providers",
			body: {
				issuer: "https://provisioning.example.com/",
				audiences: ["x"],
				jwks: w.secondJwks,
				provisioning: { role: w.first.role },
			},
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_identity_providers: (w) => [
		{ method: "GET", path: "/account/identity-providers", secret: w.second.secret, expect: [200] },
	],
	get_identity_provider: (w) => [
		{ method: "GET", path: `/account/identity-providers/${w.firstProvider}`, secret: w.second.secret, expect: [404] },
	],
	update_identity_provider: (w) => [
		{
			method: "PATCH",
			path: `/account/identity-providers/${w.firstProvider}`,
			body: { clock_skew: 1 },
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "PATCH",
			path: `/account/identity-providers/${w.secondProvider}`,
			body: { provisioning: { role: w.first.role } },
			secret: w.second.secret,
			expect: [404],
		},
	],
	delete_identity_provider: (w) => [
		{
			method: "DELETE",
			path: `/account/identity-providers/${w.firstProvider}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	create_user_external_id: (w) => [
		{
			method: "POST",
			path: `/users/${w.firstUser}/external-ids`,
			body: { provider: w.secondProvider, subject: "taken" },
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "POST",
			path: `/users/${w.second.user}/external-ids`,
			body: { provider: w.firstProvider, subject: "first-subject" },
			secret: w.second.secret,
			expect: [404],
		},
	],
	get_user_external_ids: (w) => [
		{ method: "GET", path: `/users/${w.firstUser}/external-ids`, secret: w.second.secret, expect: [404] },
	],
	delete_user_external_id: (w) => [
		{
			method: "DELETE",
			path: `/users/${w.firstUser}/external-ids/${w.firstProvider}`,
			secret: w.second.secret,
			expect: [404],
		},
		{
			method: "DELETE",
			path: `/users/${w.second.user}/external-ids/${w.firstProvider}`,
			secret: w.second.secret,
			expect: [404],
		},
	],
	// The second account's ID token naming the first account, and the first's naming the second:
	// no provider of the named account accepts it, as for an account that exists nowhere.
	exchange_user_token: (w) => [
		{
			method: "POST",
			path: "/token/exchange",
			body: { account: w.first.account, subject_token: w.secondIdToken },
			expect: [401],
		},
		{
			method: "POST",
			path: "/token/exchange",
			body: { account: w.second.account, subject_token: w.firstIdToken },
			expect: [401],
		},
	],
	issue_user_token: (w) => [
		{ method: "POST", path: `/users/${w.firstUser}/token`, body: {}, secret: w.second.secret, expect: [404] },
		{ method: "POST", path: `/users/${w.first.user}/token`, body: {}, secret: w.second.secret, expect: [404] },
		{ method: "POST", path: `/users/${w.firstUser}/token`, body: {}, secret: w.secondToken, expect: [403, 404] },
	],
};

describe("the tenant-isolation matrix", () => {
	it("covers every operation", () => {
		expect(Object.keys(ATTEMPTS).sort()).toEqual([...OPERATION_NAMES].sort());
	});

	it("never lets a second account reach the first account's data", async () => {
		const first = await bootstrap();
		const second = await bootstrap();
		const firstUser = await createUser(first, first.role, "first-account-user");
		const firstUserSecret = await issueSecret(first, firstUser);
		const firstTwin = (
			await call("POST", "/twins", {
				secret: first.secret,
				body: { description: { owner_note: "first-account-twin" } },
			})
		).body.uuid;
		await call("POST", "/twins", { secret: first.secret, body: {} });
		const entry = { first_entry: { value: "first-account-entry", visibility: "true", history: "INF" } };
		expect(
			(await call("POST", `/twins/${firstTwin}/ledgers/personal`, { secret: first.secret, body: { entries: entry } }))
				.status,
		).toBe(201);
		const secondTwin = (await call("POST", "/twins", { secret: second.secret, body: {} })).body.uuid;
		const firstCursor = (await call("GET", "/twins?count=1", { secret: first.secret })).body.cursor;
		const firstPin = (await call("POST", `/users/${firstUser}/secrets`, { secret: first.secret, body: {} })).body.pin;
		const { res: subscribed, url } = await subscribeRecording(first, { callback_url: "https://example.com/first" });
		const firstToken = new URL(url).searchParams.get("token") as string;
		const firstSubscription = subscribed.body.subscription.uuid as string;
		const firstIdentity = encodeURIComponent("RFID#first");
		const granted = await call("PATCH", `/notifications/webhooks/access/accounts/${second.account}`, {
			secret: first.secret,
			body: { topics: ["granted-topic"] },
		});
		expect(granted.status).toBe(200);
		const attached = await call("POST", `/twins/${firstTwin}/identities`, {
			secret: first.secret,
			body: { identities: { "RFID#first": { visibility: "true" } } },
		});
		expect(attached.status).toBe(201);
		const secondToken = (await call("POST", "/token", { secret: second.secret, body: { options: ["create"] } })).body
			.token as string;
		const indexed = await call("POST", "/account/services/indexes", {
			secret: first.secret,
			body: { indexes: { first_index: INDEX } },
		});
		expect(indexed.status).toBe(201);
		const series = await call("POST", "/account/services/timeseries", {
			secret: first.secret,
			body: { timeseries: { first_series: SERIES } },
		});
		expect(series.status).toBe(201);
		const uploaded = (await call("POST", "/cache", { secret: first.secret })).body;
		expect((await call("PUT", pathOf(uploaded.url), { body: "first-account-doc" })).status).toBe(200);
		const filed = await call("POST", `/twins/${firstTwin}/docs`, {
			secret: first.secret,
			body: { docs: { "first-doc.txt": { handler: uploaded.handler } } },
		});
		expect(filed.status).toBe(201);
		const pending = (await call("POST", "/cache", { secret: first.secret })).body;
		const firstHandler = pending.handler as string;
		const firstUploadToken = new URL(pending.url).searchParams.get("token") as string;
		const download = (
			await call("GET", `/twins/${firstTwin}/docs/first-doc.txt?download=true`, { secret: first.secret })
		).body.download.url as string;
		const firstDownload = download.split("/").at(-1) as string;
		const stuck = await call("POST", `/twins/${firstTwin}/stickers`, {
			secret: first.secret,
			body: { stickers: { "first-color": { recipients: [second.account, first.user] } } },
		});
		expect(stuck.status).toBe(201);
		const [firstIdp, secondIdp] = [await IdentityProvider.create(["ES256"]), await IdentityProvider.create(["ES256"])];
		const trust = async (account: Account, idp: IdentityProvider) => {
			const res = await call("POST", "/account/identity-providers", {
				secret: account.secret,
				body: { issuer: idp.issuer, audiences: [idp.audience], algorithms: ["ES256"], jwks: idp.jwks() },
			});
			expect(res.status).toBe(201);
			return res.body.uuid as string;
		};
		const [firstProvider, secondProvider] = [await trust(first, firstIdp), await trust(second, secondIdp)];
		const linked = await call("POST", `/users/${firstUser}/external-ids`, {
			secret: first.secret,
			body: { provider: firstProvider, subject: "first-subject" },
		});
		expect(linked.status).toBe(201);
		const [firstIdToken, secondIdToken] = [
			await firstIdp.idToken({ sub: "first-subject" }),
			await secondIdp.idToken({ sub: "second-subject" }),
		];
		const batchInput = (await call("POST", "/cache", { secret: first.secret })).body;
		expect((await call("PUT", pathOf(batchInput.url), { body: "{}\n" })).status).toBe(200);
		const batch = await call("POST", "/batches", {
			secret: first.secret,
			body: { operation: "create_twin", handler: batchInput.handler },
		});
		expect(batch.status).toBe(201);
		const firstBatch = batch.body.batch as string;
		const ran = await runJob(first.secret, `/batches/${firstBatch}`);
		const firstFile = (ran.results.url as string).split("/").at(-1) as string;
		const firstExport = (await call("POST", "/exports", { secret: first.secret, body: {} })).body.export as string;
		const world: World = {
			...{
				first,
				second,
				firstUser,
				firstUserSecret,
				firstTwin,
				firstCursor,
				firstPin,
				firstToken,
				firstSubscription,
				firstIdentity,
				secondTwin,
				secondToken,
			},
			...{ firstHandler, firstUploadToken, firstDownload },
			...{ firstProvider, secondProvider, firstIdToken, secondIdToken, secondJwks: secondIdp.jwks() },
			...{ firstBatch, firstFile, firstExport },
		};
		const secrets = [
			...[
				first.account,
				first.user,
				firstUser,
				firstTwin,
				first.role,
				"first-account-user",
				"first-account-twin",
				"first-account-entry",
				firstUserSecret,
				firstToken,
			],
			...[
				firstSubscription,
				"example.com/first",
				"first-doc",
				"first-account-doc",
				firstHandler,
				firstUploadToken,
				firstDownload,
				"first-color",
			],
			...[firstProvider, "first-subject", firstIdp.issuer],
			...[firstBatch, firstFile, firstExport],
		];

		let cases = 0;
		for (const [operation, attempts] of Object.entries(ATTEMPTS)) {
			for (const attempt of attempts(world)) {
				const res = await call(attempt.method, attempt.path, {
					secret: attempt.secret,
					body: attempt.body,
					headers: attempt.headers,
					env: { WEBHOOKS: { send: async () => undefined } },
				});
				cases++;
				expect([operation, res.status]).toEqual([operation, expect.toBeOneOf(attempt.expect)]);
				const text = JSON.stringify(res.body);
				for (const value of secrets) expect([operation, text.includes(value)]).toEqual([operation, false]);
			}
		}
		expect(cases).toBeGreaterThanOrEqual(56);

		// Every answer to a request naming the first account's ids (refusals, and the reads and
		// writes the second account may do, such as a read of the first account's ledger on its
		// own twin) must look exactly like the one for ids that exist nowhere: the whole
		// fingerprint, every header with Server-Timing's figures included.
		const strangers: [string, string][] = [
			[firstUser, idOf(firstUser)],
			[first.user, idOf(first.user)],
			[firstTwin, idOf(firstTwin)],
			[first.role, idOf(first.role)],
			[first.account, idOf(first.account)],
			[firstToken, firstToken.replace(/./g, "A")],
			[firstPin, firstPin.replace(/./g, "A")],
			[firstCursor, firstCursor.replace(/./g, "A")],
			[firstSubscription, idOf(firstSubscription)],
			[firstIdentity, encodeURIComponent("RFID#other")],
			["first_entry", "other_entry"],
			[firstDownload, `${idOf(firstTwin)}.${Date.now() + 3_600_000}.${"A".repeat(43)}`],
			[firstHandler, idOf(firstHandler)],
			[firstUploadToken, firstUploadToken.replace(/./g, "A")],
			["first-doc", "other-doc"],
			["first_index", "other_index"],
			["first-color", "other-color"],
			[firstProvider, idOf(firstProvider)],
			[firstBatch, idOf(firstBatch)],
			[firstExport, idOf(firstExport)],
			[firstFile, `${idOf(firstBatch)}.results.${Date.now() + 3_600_000}.${"A".repeat(43)}`],
		];
		const swap = (text: string) => strangers.reduce((t, [id, stranger]) => t.replaceAll(id, stranger), text);
		let compared = 0;
		const differences: unknown[] = [];
		for (const [operation, attempts] of Object.entries(ATTEMPTS)) {
			for (const attempt of attempts(world)) {
				const request = JSON.stringify([attempt.path, attempt.body ?? null]);
				if (swap(request) === request) continue;
				const send = (path: string, body: unknown) =>
					call(attempt.method, path, {
						secret: attempt.secret,
						body,
						headers: attempt.headers,
						env: { WEBHOOKS: { send: async () => undefined } },
					});
				const absentBody = attempt.body === undefined ? undefined : JSON.parse(swap(JSON.stringify(attempt.body)));
				const absent = fingerprint(await send(swap(attempt.path), absentBody));
				const foreign = fingerprint(await send(attempt.path, attempt.body), swap);
				// Collected, so that one difference does not hide the others behind it.
				if (JSON.stringify(foreign) !== JSON.stringify(absent))
					differences.push({ operation, method: attempt.method, path: attempt.path, foreign, absent });
				compared++;
			}
		}
		expect(differences).toEqual([]);
		expect(compared).toBeGreaterThanOrEqual(46);

		// The second account's listing holds exactly its own users.
		expect(Object.keys((await call("GET", "/users", { secret: second.secret })).body.users)).toEqual([second.user]);

		// Nothing of the first account changed.
		expect((await call("GET", `/users/${firstUser}`, { secret: first.secret })).body.name).toBe("first-account-user");
		expect((await call("GET", "/whoami", { secret: firstUserSecret })).status).toBe(200);
		expect((await call("GET", `/twins/${firstTwin}`, { secret: first.secret })).body.status).toBe("alive");
		const identity = await call("GET", `/twins/${firstTwin}/identities/${firstIdentity}`, { secret: first.secret });
		expect(identity.body).toMatchObject({ validity_ts: null, visibility: "true" });
		expect((await call("GET", `/resolve/${firstIdentity}`, { secret: first.secret })).body.twins).toEqual([firstTwin]);
		const ledger = await call("GET", `/twins/${firstTwin}/ledgers/personal/history`, { secret: first.secret });
		expect(Object.values(ledger.body.entries.first_entry)).toEqual(["first-account-entry"]);
		expect((await call("GET", `/roles/${first.role}`, { secret: first.secret })).body.name).toBe("Administrator");
		expect((await call("GET", pathOf(url))).body.status).toBe("confirmed");
		expect((await call("POST", `/secrets/${first.account}/${firstPin}`)).status).toBe(201);
		expect((await call("GET", "/notifications/webhooks/access", { secret: first.secret })).body).toEqual({
			accounts: { [second.account]: { topics: ["granted-topic"] } },
			cursor: null,
		});
	});

	// The second account's users, one of which sees the first account's twin, against the first
	// account's identity and entries on it: each answer is compared whole (status, body and every
	// header) with the one for a name nobody holds. Within one account, a name its role's rules
	// hide is compared with an absent one in test/policy/hidden-writes.test.ts (add, update, value
	// update, delete, reads and conditions on entries; creates of identities; resolve).
	it("answers for the first account's identities and entries as for absent ones, every header", async () => {
		const [first, second] = [await bootstrap(), await bootstrap()];
		const twin = (await call("POST", "/twins", { secret: first.secret, body: { description: { shared: true } } })).body
			.uuid as string;
		const attached = await call("POST", `/twins/${twin}/identities`, {
			secret: first.secret,
			body: { identities: { "SN#hidden1": { visibility: "true" } } },
		});
		expect(attached.status).toBe(201);
		const added = await call("POST", `/twins/${twin}/ledgers/personal`, {
			secret: first.secret,
			body: { entries: { first_entry: { value: 1, visibility: "true", history: "INF" } } },
		});
		expect(added.status).toBe(201);

		// The viewer sees the twin; its identity rule reads the first account's identity, public
		// though it is, and refuses it, so D1 reads a row the answer must not count.
		const allowAll: Statement = { effect: "deny", actions: [] };
		const viewer = await member(
			second,
			await role(second, allowAll, { twin: "TWIN.shared == true", identity: "owner == account" }, "Viewer"),
		);
		const finder = await member(
			second,
			await role(second, allowAll, { twin: "TWIN.shared == true", identity: "true" }, "Finder"),
		);
		expect((await call("GET", `/twins/${twin}`, { secret: viewer.secret })).status).toBe(200);
		// What a reader may see is found, so the comparisons below are not of two empty reads.
		const found = await call("GET", `/resolve/${encodeURIComponent("SN#hidden1")}?context=system`, {
			secret: finder.secret,
		});
		expect(found.body.twins).toEqual([twin]);

		type Case = {
			method: string;
			path: string;
			body?: unknown;
			account?: true;
			undo?: { method: string; path: string };
		};
		// A name nobody holds in place of the first account's; with `account`, a ledger of an
		// account that exists nowhere in place of the first account's too.
		// The absent name's directory is in the same database as the hidden one's (resolve asks it).
		const absent = await absentIdentityLike("SN#hidden1", "SN#absent");
		const names: [string, string][] = [
			["SN%23hidden1", absent.replace("#", "%23")],
			["SN#hidden1", absent],
			["first_entry", "other_entry"],
		];
		// Of the first account's bucket: an absent id is compared in the database a present one names.
		const nowhere = idOf(first.account);
		const renaming = (c: Case) => (text: string) =>
			[...names, ...(c.account ? [[first.account, nowhere]] : [])].reduce(
				(t, [from, to]) => t.replaceAll(from, to),
				text,
			);
		// The times a write stamps differ between two requests by design.
		const times = (text: string) => text.replace(/"(\w+_ts)":[\d.]+/g, '"$1":"ts"');

		const identity = `/twins/${twin}/identities/SN%23hidden1`;
		const entries = `/twins/${twin}/ledgers`;
		const other = crypto.randomUUID();
		const identityCases: Case[] = [
			{ method: "GET", path: identity },
			{ method: "PATCH", path: identity, body: { validity_ts: null } },
			{ method: "DELETE", path: identity },
			{
				method: "POST",
				path: `/twins/${twin}/identities`,
				body: { identities: { "SN#hidden1": {} } },
				undo: { method: "DELETE", path: identity },
			},
		];
		const ledgerCases: Case[] = [
			{
				method: "POST",
				path: `${entries}/personal`,
				body: { entries: { first_entry: { value: 2 } } },
				undo: { method: "DELETE", path: `${entries}/personal` },
			},
			{ method: "PATCH", path: `${entries}/personal`, body: { entries: { first_entry: { value: 2 } } } },
			{ method: "PATCH", path: `${entries}/personal/value`, body: { entries: { first_entry: { value: 2 } } } },
			{ method: "DELETE", path: `${entries}/personal?entries=first_entry` },
			{
				method: "POST",
				path: `${entries}/personal`,
				body: { entries: { mine: { value: 2 } }, conditions: { first_entry: "entry_value == null" } },
				undo: { method: "DELETE", path: `${entries}/personal` },
			},
			{
				method: "POST",
				path: `${entries}/${first.account}`,
				body: { entries: { first_entry: { value: 2 } } },
				account: true,
			},
			{
				method: "PATCH",
				path: `${entries}/${first.account}`,
				body: { entries: { first_entry: { value: 2 } } },
				account: true,
			},
			{
				method: "PATCH",
				path: `${entries}/${first.account}/value`,
				body: { entries: { first_entry: { value: 2 } } },
				account: true,
			},
			{ method: "DELETE", path: `${entries}/${first.account}?entries=first_entry`, account: true },
			{ method: "DELETE", path: `${entries}/${first.account}`, account: true },
			// The first account's ledger, which the second's users may read but not see into.
			{ method: "GET", path: `${entries}/${first.account}`, account: true },
			{ method: "GET", path: `${entries}/${first.account}/value`, account: true },
			{ method: "GET", path: `${entries}/${first.account}/history`, account: true },
			{ method: "GET", path: `${entries}/owner?entries=first_entry` },
			{ method: "GET", path: `${entries}/owner/value?entries=first_entry` },
			{ method: "GET", path: `${entries}/owner/history?entries=first_entry` },
		];
		const contexts = [
			"personal",
			"system",
			first.account,
			`${first.account},${other}`,
			`${other},${first.account},${second.account}`,
		];
		const resolveCases: Case[] = contexts.flatMap((context) =>
			["false", "true"].map((details) => ({
				method: "GET",
				path: `/resolve/SN%23hidden1?context=${context}&details=${details}`,
			})),
		);

		// The finder may see the first account's identity, so it does not resolve it here; its
		// creates of the same name are its account's own, which nothing of the first's may block.
		const readers: [string, Account, Case[]][] = [
			["admin", second, [...identityCases, ...ledgerCases, ...resolveCases]],
			["viewer", viewer, [...identityCases, ...ledgerCases, ...resolveCases]],
			["finder", finder, [...identityCases, ...ledgerCases]],
		];
		const statuses = new Set<number>();
		const warmUp = await newTwin(second.secret, { shared: true });
		for (const [who, reader, cases] of readers) {
			await warmWriter(reader.secret, warmUp);
			for (const c of cases) {
				const send = async (naming: (text: string) => string) => {
					const body = c.body === undefined ? undefined : JSON.parse(naming(JSON.stringify(c.body)));
					const res = await call(c.method, naming(c.path), { secret: reader.secret, body });
					// A write that succeeded is taken back, so both requests meet the same state.
					if (c.undo && res.status < 300)
						expect((await call(c.undo.method, naming(c.undo.path), { secret: reader.secret })).status).toBeLessThan(
							300,
						);
					return res;
				};
				const rename = renaming(c);
				const hidden = await send((text) => text);
				const absent = await send(rename);
				expect([who, c.method, c.path, fingerprint(hidden, (text) => times(rename(text)))]).toEqual([
					who,
					c.method,
					c.path,
					fingerprint(absent, times),
				]);
				if (c.path.startsWith("/resolve/")) expect(hidden.body).toEqual({ twins: [], cursor: null });
				statuses.add(hidden.status);
			}
		}
		// Writes that went through, reads, and refusals of each kind were compared.
		expect([...statuses].sort()).toEqual([200, 201, 403, 404]);

		// Nothing of the first account's changed.
		const kept = await call("GET", `/twins/${twin}/identities/SN%23hidden1`, { secret: first.secret });
		expect(kept.body).toMatchObject({ validity_ts: null, visibility: "true" });
		const ledger = await call("GET", `${entries}/personal`, { secret: first.secret });
		expect(Object.keys(ledger.body.entries)).toEqual(["first_entry"]);
		expect(ledger.body.entries.first_entry.value).toBe(1);
	});
});

// A reader whose role confines it, against a twin it may not see: its index page, its stream and
// its webhook answer as if the twin had no row and sent no message. What is accepted apart: the
// rows a page examines (a table's size, in Server-Timing) and gaps in event ids. The streams' and
// webhooks' cases are in test/streams/filter.test.ts and test/notifications/confined.test.ts.
describe("a confined reader, against a twin it may not see", () => {
	it("reads an index page as if the hidden twin had no row, but for the rows it examined", async () => {
		const pages = [];
		for (const hiddenRow of [true, false]) {
			// Both accounts on one database: the bookmark header names the caller's first.
			const admin = await bootstrapOn("DB_0");
			const created = await call("POST", "/account/services/indexes", {
				secret: admin.secret,
				body: { indexes: { vans: INDEX } },
			});
			expect(created.status).toBe(201);
			const driver = await member(
				admin,
				await role(admin, { effect: "deny", actions: null }, { twin: "TWIN.driver == user" }, "Driver"),
			);
			const mine = (
				await call("POST", "/twins", { secret: admin.secret, body: { description: { driver: driver.user } } })
			).body.uuid as string;
			const hidden = (
				await call("POST", "/twins", { secret: admin.secret, body: { description: { driver: "someone else" } } })
			).body.uuid as string;
			const write = (twin: string) =>
				call("POST", `/twins/${twin}/ledgers/personal`, {
					secret: admin.secret,
					body: { entries: { first_entry: { value: "v" } } },
				});
			expect((await write(mine)).status).toBe(201);
			if (hiddenRow) expect((await write(hidden)).status).toBe(201);
			const page = await call("GET", "/account/services/indexes/vans/data?count=10", { secret: driver.secret });
			const swap = (text: string) =>
				text
					.replaceAll(mine, "mine")
					.replace(/"updated_ts":[\d.]+/g, '"updated_ts":0')
					.replace(/rows_read=\d+/, "rows_read=n");
			pages.push(JSON.stringify(fingerprint(page, swap)));
		}
		expect(pages[0]).toBe(pages[1]);
	});
});

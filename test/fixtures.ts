// What the tests inside workerd set up and call: requests through the Worker, accounts, users
// and roles, twins, identities and ledger entries, injected D1 faults, webhook subscriptions
// with the test receiver (test/webhooks/receiver.ts), and waiting on what cannot be awaited.
import { createExecutionContext, createMessageBatch, getQueueResult, runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect, inject, onTestFinished, vi } from "vitest";
import worker from "../src/index";
import { ERRORS } from "../src/base/errors";
import { open } from "../src/base/seal";
import type { ConfirmationJob } from "../src/notifications/jobs";
import { tokenUrl } from "../src/notifications/messages";

// ---- Requests ----

export const BASE = "https://registry.test";

type CallOptions = {
	secret?: string;
	body?: unknown;
	headers?: Record<string, string>;
	// Bindings to replace for this request (another CALLBACK_POLICY, a recording producer).
	env?: Partial<Record<keyof Env, unknown>>;
};

// Every call goes through the Worker's own fetch handler, as a client's request would.
export async function call(method: string, path: string, options: CallOptions = {}) {
	const headers = new Headers(options.headers);
	// Each call comes from its own client address unless the test names one, so that the
	// per-address rate limits (src/http/rate-limit.ts) only meet the tests that aim at them.
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	if (options.secret) headers.set("authorization", options.secret);
	let body: string | undefined;
	if (options.body !== undefined) {
		body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
		// JSON unless the test sends another type (a merge patch, say).
		if (!headers.has("content-type")) headers.set("content-type", "application/json");
	}
	const request = new Request(BASE + path, { method, headers, body });
	const response = await (options.env ? fetchWithEnv(request, options.env) : exports.default.fetch(request));
	const text = await response.text();
	return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

export function randomAddress() {
	const bytes = crypto.getRandomValues(new Uint8Array(3));
	return `10.${bytes.join(".")}`;
}

// Calls the Worker's fetch handler with a modified environment (a missing binding, another
// ADMIN_TOKEN), which the `exports` entry point cannot take.
export function fetchWithEnv(request: Request, changes: Partial<Record<keyof Env, unknown>>) {
	type Incoming = Parameters<typeof worker.fetch>[0];
	return worker.fetch(request as Incoming, { ...env, ...changes } as Env, createExecutionContext());
}

// The error envelope, with the trace equal to the response's request id and the catalogue's
// string code of the subcode (src/base/errors.ts).
const CODE_OF = new Map(Object.entries(ERRORS).map(([code, error]) => [error.subcode as number, code]));

export function expectError(res: Awaited<ReturnType<typeof call>>, status: number, subcode: number) {
	expect(res.status).toBe(status);
	expect(res.body).toMatchObject({ subcode, code: CODE_OF.get(subcode), trace: res.headers.get("x-request-id") });
	expect(typeof res.body.description).toBe("string");
	expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
}

// Everything a client could compare between two answers, except the request's own id, the time
// in Server-Timing, and the D1 bookmark's value (the database's state when the request ran, not
// the resource). `swap` replaces names that differ between the two requests by design.
export function fingerprint(res: Awaited<ReturnType<typeof call>>, swap: (text: string) => string = (text) => text) {
	const { trace: _, ...body } = res.body ?? {};
	const headers = [...res.headers.entries()]
		.filter(([name]) => name !== "x-request-id")
		.map(([name, value]) => [
			name,
			name === "server-timing" ? value.replace(/dur=[\d.]+/, "dur=") : name === "x-d1-bookmark" ? "bookmark" : value,
		]);
	return JSON.parse(swap(JSON.stringify({ status: res.status, body, headers })));
}

// A figure of the Server-Timing header: queries, rows_read or rows_written.
export function d1Cost(res: { headers: Headers }, figure: "queries" | "rows_read" | "rows_written") {
	const match = new RegExp(`${figure}=(\\d+)`).exec(res.headers.get("server-timing") ?? "");
	if (!match) throw new Error(`no ${figure} in Server-Timing`);
	return Number(match[1]);
}

// ---- Accounts, users and roles ----

export type Account = { account: string; user: string; role: string; secret: string };
export type Statement = { effect: "allow" | "deny"; actions: string[] | null };
export type Rules = { twin?: string | null; entry?: string | null; identity?: string | null };

export async function bootstrap(): Promise<Account> {
	const res = await call("POST", "/admin/accounts", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
	expect(res.status).toBe(201);
	return res.body;
}

export async function issueSecret(admin: Account, user: string, validity_ts?: number | null) {
	const pin = await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: { validity_ts } });
	expect(pin.status).toBe(201);
	const redeemed = await call("POST", `/secrets/${admin.account}/${pin.body.pin}`);
	expect(redeemed.status).toBe(201);
	return redeemed.body.secret as string;
}

export async function createUser(admin: Account, role = admin.role, name = "someone") {
	const res = await call("POST", "/users", { secret: admin.secret, body: { name, role } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A role written straight into D1, past the API: no grant check, no journal line in the
// account's object. For tests that need a role whose making is not what they test.
export async function insertRole(account: string, statement: Statement) {
	const uuid = crypto.randomUUID();
	await env.DB.prepare(
		"INSERT INTO roles (uuid, account, name, rules, statement, created_ts, updated_ts) VALUES (?, ?, ?, ?, ?, 0, 0)",
	)
		.bind(
			uuid,
			account,
			"test role",
			JSON.stringify({ twin: null, entry: null, identity: null }),
			JSON.stringify(statement),
		)
		.run();
	return uuid;
}

// A user with the given statement and a working secret.
export async function userWith(admin: Account, statement: Statement): Promise<Account> {
	const role = await insertRole(admin.account, statement);
	const user = await createUser(admin, role);
	return { ...admin, user, role, secret: await issueSecret(admin, user) };
}

// A role made through the API by `admin`, so every grant check applies to it.
export async function role(admin: Account, statement: Statement, rules: Rules = {}, name = "Some role") {
	const res = await call("POST", "/roles", { secret: admin.secret, body: { name, statement, rules } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A user of `admin`'s account with the given role and description, and a working secret.
export async function member(
	admin: Account,
	roleUuid: string,
	description: Record<string, unknown> = {},
): Promise<Account> {
	const res = await call("POST", "/users", {
		secret: admin.secret,
		body: { name: "member", role: roleUuid, description },
	});
	expect(res.status).toBe(201);
	const user = res.body.uuid as string;
	return { ...admin, user, role: roleUuid, secret: await issueSecret(admin, user) };
}

// A user of `admin`'s account holding a new role with these rules and the default statement
// (the administrator may grant any rules), with a working secret.
export async function userWithRules(
	admin: Account,
	rules: Rules,
	description: Record<string, unknown> = {},
): Promise<Account> {
	const made = await call("POST", "/roles", { secret: admin.secret, body: { name: "Rule holder", rules } });
	expect(made.status).toBe(201);
	const user = await call("POST", "/users", {
		secret: admin.secret,
		body: { name: "reader", role: made.body.uuid, description },
	});
	expect(user.status).toBe(201);
	return {
		...admin,
		user: user.body.uuid as string,
		role: made.body.uuid as string,
		secret: await issueSecret(admin, user.body.uuid),
	};
}

// ---- Twins, scans, identities and ledgers ----

export async function newTwin(secret: string, description: Record<string, unknown> = {}) {
	const res = await call("POST", "/twins", { secret, body: { description } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// Twins written straight into D1 in batches, for tests that need many.
export async function seedTwins(owner: string, descriptions: Record<string, unknown>[]) {
	const uuids = descriptions.map(() => crypto.randomUUID());
	const statement = env.DB.prepare(
		`INSERT INTO twins (uuid, owner, status, description, creation_certificate, termination_certificate, updated_ts)
		VALUES (?, ?, 'alive', ?, ?, NULL, 1)`,
	);
	for (let i = 0; i < uuids.length; i += 500) {
		await env.DB.batch(
			uuids
				.slice(i, i + 500)
				.map((uuid, j) =>
					statement.bind(
						uuid,
						owner,
						JSON.stringify(descriptions[i + j]),
						JSON.stringify({ uuid, creator: owner, created_ts: 1 }),
					),
				),
		);
	}
	return uuids;
}

export const scan = (secret: string, query: string) => call("GET", `/twins?${query}`, { secret });

// Every page of a scan, to the end.
export async function walk(secret: string, query: string) {
	const seen: unknown[] = [];
	let cursor: string | null = null;
	let pages = 0;
	do {
		const res = await scan(secret, `${query}${cursor ? `&cursor=${cursor}` : ""}`);
		expect(res.status).toBe(200);
		seen.push(...res.body.twins);
		cursor = res.body.cursor;
		pages++;
	} while (cursor !== null);
	return { seen, pages };
}

export const idPath = (twin: string, identity?: string) =>
	`/twins/${twin}/identities${identity === undefined ? "" : `/${encodeURIComponent(identity)}`}`;

export async function attach(
	secret: string,
	twin: string,
	identities: Record<string, { validity_ts?: number | null; visibility?: string | null }>,
) {
	const res = await call("POST", idPath(twin), { secret, body: { identities } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.identities;
}

// Identities written straight into D1 in batches, for tests that need thousands.
export async function seedIdentities(
	account: string,
	rows: { twin: string; identity: string; visibility?: string | null }[],
) {
	const statement = env.DB.prepare(
		"INSERT INTO twin_identities (twin, account, identity, validity_ts, visibility, created_ts, updated_ts) VALUES (?, ?, ?, NULL, ?, 1, 1)",
	);
	for (let i = 0; i < rows.length; i += 500) {
		await env.DB.batch(
			rows.slice(i, i + 500).map((r) => statement.bind(r.twin, account, r.identity, r.visibility ?? null)),
		);
	}
}

export function ledger(twin: string, which = "personal", tail = "") {
	return `/twins/${twin}/ledgers/${which}${tail}`;
}

export async function addEntries(secret: string, twin: string, entries: Record<string, unknown>) {
	const res = await call("POST", ledger(twin), { secret, body: { entries } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.entries;
}

// ---- Injected D1 faults ----

// A fault injected into D1 reaches its sessions too (the Worker runs each request in one).
export function sessionsToo(target: D1Database, property: string | symbol, wrap: (db: D1Database) => D1Database) {
	if (property !== "withSession") return undefined;
	return (constraint?: string) => wrap(target.withSession(constraint) as unknown as D1Database);
}

// D1 whose batches fail after their first statement has run: D1 runs a batch as one
// transaction, so nothing of it may remain.
export function failingBatches(db: D1Database): D1Database {
	return new Proxy(db, {
		get(target, property) {
			const session = sessionsToo(target, property, failingBatches);
			if (session) return session;
			if (property === "batch") {
				return (statements: D1PreparedStatement[]) =>
					target.batch([statements[0], target.prepare("SELECT * FROM injected_fault"), ...statements.slice(1)]);
			}
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// ---- Logged failures ----

// console.error, recorded instead of printed, for a test that makes the service log a failure on
// purpose and checks what it logged. Restored when the test ends.
export function loggedErrors() {
	const spy = vi.spyOn(console, "error").mockImplementation(() => undefined);
	onTestFinished(() => spy.mockRestore());
	return spy;
}

// ---- Network failures ----

// The next `times` requests the Worker or its objects (they run in this isolate) send to `url`
// fail as the network fails them: "lost" at once, as a dropped connection, "hang" when the
// request's own signal gives up, as a receiver that never answers. Not made on a real
// connection, whose failure the runtime also reports as an uncaught exception of its own,
// which reads as a failed test. Other requests go out as usual. Undone when the test ends.
export function failingNetwork(url: string, how: "lost" | "hang", times = Number.POSITIVE_INFINITY) {
	const real = globalThis.fetch;
	let left = times;
	const spy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
		const target = new URL(input instanceof Request ? input.url : input).href;
		if (target !== new URL(url).href || left <= 0) return real(input, init);
		left--;
		if (how === "lost") return Promise.reject(new Error("Network connection lost."));
		return new Promise((_, reject) =>
			init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
		);
	});
	onTestFinished(() => spy.mockRestore());
	return spy;
}

// ---- Waiting ----

// Asks `probe` until `done` accepts its answer, and answers it; fails past `timeoutMs`. Only for
// what a test cannot await: a message through the real queue reaching the receiver, an attempt
// its delivery object finishes on its own, the clock passing a given time.
export async function until<T>(
	probe: () => Promise<T> | T,
	done: (value: T) => boolean,
	what: string,
	timeoutMs = 15_000,
): Promise<T> {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const value = await probe();
		if (done(value)) return value;
		if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
		await new Promise((resolve) => setTimeout(resolve, 20));
	}
}

// Until the clock reads later than `seconds` (a timestamp the service answered).
export async function clockPast(seconds: number) {
	if (!Number.isFinite(seconds)) throw new Error(`not a time: ${seconds}`);
	await until(
		() => Date.now() / 1000,
		(at) => at > seconds,
		`the clock to pass ${seconds}`,
		5_000,
	);
}

// ---- Webhooks ----

export const CLIENT_SECRET = "Client-secret_16";

export const receiver = () => `http://127.0.0.1:${inject("receiverPort")}`;

export type Received = { path: string; headers: Record<string, string>; body: string; at: number };

// What the receiver got for `id` so far.
export async function received(id: string): Promise<Received[]> {
	return (await fetch(`${receiver()}/log/${id}`)).json();
}

// The messages the receiver got for `id`, once there are at least `count` of them.
export async function messagesFor(id: string, count = 1): Promise<Received[]> {
	return until(
		() => received(id),
		(log) => log.length >= count,
		`${count} messages for ${id}`,
	);
}

export const bodies = (log: Received[]) => log.map((m) => JSON.parse(m.body));

// Has the receiver answer 200 to its hanging requests for `id`.
export async function release(id: string) {
	await (await fetch(`${receiver()}/release/${id}`, { method: "POST" })).text();
}

export function pathOf(url: string) {
	const u = new URL(url);
	return u.pathname + u.search;
}

// A producer that keeps what it is given, in place of the WEBHOOKS queue.
export function recordingQueue() {
	const jobs: ConfirmationJob[] = [];
	return { jobs, binding: { send: async (job: ConfirmationJob) => void jobs.push(job) } };
}

// Subscribes with a producer that records the queued job instead of sending it, so a test can
// hand it to the real consumer itself, attempt by attempt.
export async function subscribeRecording(
	admin: Account,
	body: Record<string, unknown>,
	headers: Record<string, string> = {},
) {
	const { jobs, binding } = recordingQueue();
	const res = await call("POST", "/notifications/webhooks", {
		secret: admin.secret,
		body: { topic: "twins", ...body },
		headers,
		env: { CALLBACK_POLICY: "any", WEBHOOKS: binding },
	});
	expect(res.status).toBe(201);
	expect(jobs).toHaveLength(1);
	return { res, job: jobs[0], url: await confirmationUrl(res.body.subscription.uuid) };
}

// A subscription to `topic` whose callback is the test receiver under `id`, confirmed with the
// token of its (recorded, not delivered) confirmation message.
export async function confirmedSubscription(
	admin: Account,
	topic: string,
	id: string,
	extra: Record<string, unknown> = {},
	headers: Record<string, string> = {},
) {
	const { res, url } = await subscribeRecording(
		admin,
		{ topic, callback_url: `${receiver()}/r/${id}/ok`, ...extra },
		headers,
	);
	const confirmed = await call("GET", pathOf(url));
	expect(confirmed.status).toBe(200);
	return {
		uuid: res.body.subscription.uuid as string,
		serverSecret: res.body.server_secret as string | undefined,
		url,
	};
}

// The confirmation URL the next message to this subscription will carry, read from its sealed
// token, for tests that manage a subscription without delivering its message first.
export async function confirmationUrl(uuid: string) {
	const row = await storedSubscription(uuid);
	return tokenUrl(env, row?.publisher as string, await open(env, uuid, "token", row?.sealed_token as string));
}

// Runs the Worker's queue handler on one message, as the queue would on its `attempts`-th try.
export async function consume(job: ConfirmationJob, attempts = 1, queueName = "twin-webhooks") {
	const batch = createMessageBatch<ConfirmationJob>(queueName, [
		{ id: `m-${attempts}-${crypto.randomUUID()}`, timestamp: new Date(), attempts, body: job },
	]);
	const ctx = createExecutionContext();
	// The queue result does not keep retry delays; a spy on the message does.
	const retry = vi.spyOn(batch.messages[0], "retry");
	const queue = worker.queue as ExportedHandlerQueueHandler<Env, ConfirmationJob>;
	await queue(batch, env, ctx);
	const result = await getQueueResult(batch, ctx);
	return { ...result, retryDelays: retry.mock.calls.map(([options]) => options?.delaySeconds) };
}

export async function storedSubscription(uuid: string) {
	return env.DB.prepare("SELECT * FROM subscriptions WHERE uuid = ?").bind(uuid).first<Record<string, unknown>>();
}

// The outbox rows of a subscription: what was published to it, delivered or not.
export async function outboxOf(subscription: string) {
	const { results } = await env.DB.prepare("SELECT * FROM notification_outbox WHERE subscription = ? ORDER BY sent_ts")
		.bind(subscription)
		.all();
	return results as Record<string, unknown>[];
}

// ---- Docs: uploads, files and downloads ----

// `length` bytes from a xorshift generator: the same for a seed on every run, different from
// one seed to another and from one position to the next, so that a misplaced or dropped chunk
// shows. (crypto.getRandomValues would not repeat, and fills 64 KiB per call at most.)
export function patterned(length: number, seed = 1): Uint8Array {
	const bytes = new Uint8Array(length);
	let x = seed >>> 0 || 1;
	for (let i = 0; i < length; i++) {
		x ^= x << 13;
		x ^= x >>> 17;
		x ^= x << 5;
		x >>>= 0;
		bytes[i] = x & 0xff;
	}
	return bytes;
}

// The lowercase hex SHA-256 the service answers for a file.
export async function sha256Hex(bytes: Uint8Array): Promise<string> {
	const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
	return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

// The answer to a PUT on an upload URL or a GET of a download URL: the bytes as they came, and
// the JSON they hold when the answer is JSON (an upload's result or an error), so that
// `expectError` reads it as it reads a `call`.
export type Transfer = { status: number; headers: Headers; body: any; bytes: Uint8Array };

// Sent through the Worker's fetch handler as a client's request, from its own address unless
// the headers name one (failed lookups on these routes spend the address's SECRET_ATTEMPTS).
export async function transfer(
	url: string,
	init: RequestInit & { headers?: Record<string, string> },
): Promise<Transfer> {
	const headers = new Headers(init.headers);
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	const response = await exports.default.fetch(new Request(url, { ...init, headers }));
	const bytes = new Uint8Array(await response.arrayBuffer());
	// An answer of the service, or a downloaded doc that was uploaded as JSON (its bytes may be any).
	const json = response.headers.get("content-type")?.startsWith("application/json") && bytes.length > 0;
	return {
		status: response.status,
		headers: response.headers,
		bytes,
		body: json ? parsedOrUndefined(bytes) : undefined,
	};
}

function parsedOrUndefined(bytes: Uint8Array): unknown {
	try {
		return JSON.parse(new TextDecoder().decode(bytes));
	} catch {
		return undefined;
	}
}

// A PUT on an upload URL. Bytes go with their Content-Length; a stream goes without one
// unless the headers give it.
export function putFile(
	url: string,
	body: Uint8Array | ReadableStream<Uint8Array> | null,
	headers: Record<string, string> = {},
) {
	return transfer(url, { method: "PUT", body, headers });
}

// The GET of a download URL.
export function download(url: string, headers: Record<string, string> = {}) {
	return transfer(url, { method: "GET", headers });
}

export type UploadUrl = { handler: string; url: string; validity_ts: number };

// A new upload URL of the caller's, valid until `validity_ts` (the default hour when absent).
export async function uploadUrl(secret: string, validity_ts?: number): Promise<UploadUrl> {
	const res = await call("POST", "/cache", { secret, body: validity_ts === undefined ? undefined : { validity_ts } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body;
}

// An upload URL of the caller's that holds `bytes`, with their hash as the service answered it.
export async function uploaded(secret: string, bytes: Uint8Array): Promise<UploadUrl & { hash: string }> {
	const created = await uploadUrl(secret);
	const put = await putFile(created.url, bytes);
	expect(put.status, JSON.stringify(put.body)).toBe(200);
	return { ...created, hash: put.body.hash as string };
}

// The path of a twin's docs, or of one doc (its name with its folders' '/' as they are).
export const docPath = (twin: string, name?: string) => `/twins/${twin}/docs${name === undefined ? "" : `/${name}`}`;

// Uploads `bytes` and attaches them to `twin` as `name`; answers the doc's record.
export async function attachDoc(
	secret: string,
	twin: string,
	name: string,
	bytes: Uint8Array,
	extra: Record<string, unknown> = {},
) {
	const { handler } = await uploaded(secret, bytes);
	const res = await call("POST", docPath(twin), { secret, body: { docs: { [name]: { handler, ...extra } } } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.docs[name];
}

// A download URL of a doc, issued to the caller.
export async function downloadUrl(secret: string, twin: string, name: string, validity_ts?: number): Promise<string> {
	const query = `download=true${validity_ts === undefined ? "" : `&validity_ts=${validity_ts}`}`;
	const res = await call("GET", `${docPath(twin, name)}?${query}`, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.download.url;
}

// The account's count of doc bytes (attached docs and uploads not yet attached).
export async function docBytes(account: string): Promise<number> {
	const row = await env.DB.prepare("SELECT doc_bytes FROM accounts WHERE uuid = ?")
		.bind(account)
		.first<{ doc_bytes: number }>();
	return row!.doc_bytes;
}

// The R2 key a live upload's bytes went to (null before its PUT), undefined once the row is gone.
export async function uploadObject(handler: string): Promise<string | null | undefined> {
	const row = await env.DB.prepare("SELECT object FROM uploads WHERE handler = ?")
		.bind(handler)
		.first<{ object: string | null }>();
	return row === null ? undefined : row.object;
}

// The R2 key a doc's bytes live under.
export async function docObject(twin: string, name: string): Promise<string> {
	const row = await env.DB.prepare("SELECT object FROM docs WHERE twin = ? AND name = ?")
		.bind(twin, name)
		.first<{ object: string }>();
	if (!row) throw new Error(`no doc ${name} on ${twin}`);
	return row.object;
}

// Imported here, with the helpers that need them, because this module grows by appending.
import { evictDurableObject, runInDurableObject } from "cloudflare:test";
import type { AccountDO } from "../src/objects";
import { implementationOf, type Lazy } from "../src/base/lazy-object";
import type { StreamObject } from "../src/notifications/streams/object";

// Runs `work` on a Durable Object's implementation (what its methods run on: its env, its
// fields), loading it as the object's first call would.
export function inImplementation<I, T>(
	stub: DurableObjectStub<Rpc.DurableObjectBranded & Lazy<I>>,
	work: (implementation: I, state: DurableObjectState) => T | Promise<T>,
) {
	return runInDurableObject(stub, async (instance: Lazy<I>, state) => work(await implementationOf(instance), state));
}

// Changes what the account's object reads from its environment (the doc limits MAX_UPLOADS,
// MAX_TWIN_DOCS and MAX_DOC_BYTES, the DOCS bucket) until the test ends. `call`'s `env`
// option cannot: it reaches the Worker, and the object keeps the env it was built with. The
// object of an account a test made serves only that test. Answers a function that undoes the
// change sooner.
export async function objectEnv(account: string, changes: Partial<Record<keyof Env, unknown>>) {
	type Swappable = { env: Env };
	const stub = env.ACCOUNTS.getByName(account);
	const names = Object.keys(changes) as (keyof Env)[];
	const original = await inImplementation(stub, (instance) => {
		const swappable = instance as unknown as Swappable;
		const before = Object.fromEntries(names.map((name) => [name, swappable.env[name]]));
		swappable.env = { ...swappable.env, ...changes } as Env;
		return before;
	});
	let undone = false;
	const undo = async () => {
		if (undone) return;
		undone = true;
		await inImplementation(stub, (instance) => {
			const swappable = instance as unknown as Swappable;
			swappable.env = { ...swappable.env, ...original } as Env;
		});
	};
	onTestFinished(undo);
	return undo;
}

// Ends an upload URL's validity now, as if its time had passed, without waiting for it. Its
// row stays until the account's alarm, due at the validity it was given, removes it.
export async function expireUpload(handler: string) {
	const { meta } = await env.DB.prepare("UPDATE uploads SET validity_ts = ? WHERE handler = ?")
		.bind(Date.now() / 1000 - 1, handler)
		.run();
	expect(meta.changes).toBe(1);
}

// ---- Indexes tables ----

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

// Ledgers written straight into D1, past the account's object: no index row follows them until
// a build walks them. `size` is what a write through the API would store (no visibility, history
// or publish): the entry's name as JSON, a colon, and its value's compact JSON, in bytes.
export async function seedLedgers(account: string, ledgers: { twin: string; entries: Record<string, unknown> }[]) {
	const statement = env.DB.prepare(
		`INSERT INTO ledger_entries (twin, account, name, value, size, entry_created_ts, entry_updated_ts, value_changed_ts)
		VALUES (?, ?, ?, ?, ?, 1, 1, 1)`,
	);
	const bytes = (text: string) => new TextEncoder().encode(text).length;
	const rows = ledgers.flatMap(({ twin, entries }) =>
		Object.entries(entries).map(([name, value]) => {
			const text = JSON.stringify(value);
			return statement.bind(twin, account, name, text, bytes(JSON.stringify(name)) + 1 + bytes(text));
		}),
	);
	for (let i = 0; i < rows.length; i += 200) await env.DB.batch(rows.slice(i, i + 200));
}

// The uuid and current generation of an account's table, read from D1.
export async function indexTableRow(account: string, name: string) {
	const row = await env.DB.prepare("SELECT uuid, generation FROM index_tables WHERE account = ? AND name = ?")
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
	const statement = env.DB.prepare(
		'INSERT INTO index_rows ("table", generation, twin, properties, size, updated_ts) VALUES (?, ?, ?, ?, ?, 1)',
	);
	const bound = rows.map(({ twin, properties }) => {
		const text = JSON.stringify(properties);
		return statement.bind(uuid, generation, twin, text, new TextEncoder().encode(text).length);
	});
	for (let i = 0; i < bound.length; i += 500) await env.DB.batch(bound.slice(i, i + 500));
}

// How many rows a table (by uuid) has in D1 below a generation: the old ones the alarm deletes.
export async function oldIndexRows(uuid: string, below: number) {
	return (await env.DB.prepare('SELECT count(*) AS n FROM index_rows WHERE "table" = ? AND generation < ?')
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

// ---- Live streams ----

export type StreamEvent = { id?: string; event?: string; data?: any; comment?: string };

// A queue of what arrives, awaited one at a time: `next()` answers the next item, or fails
// after `timeoutMs` naming what it waited for.
class Arrivals<T> {
	private readonly items: T[] = [];
	private readonly waiting: ((item: T) => void)[] = [];

	push(item: T) {
		const waiter = this.waiting.shift();
		if (waiter) waiter(item);
		else this.items.push(item);
	}

	next(what: string, timeoutMs = 5_000): Promise<T> {
		const item = this.items.shift();
		if (item !== undefined) return Promise.resolve(item);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.waiting.splice(this.waiting.indexOf(waiter), 1);
				reject(new Error(`waited ${timeoutMs} ms for ${what}`));
			}, timeoutMs);
			const waiter = (value: T) => {
				clearTimeout(timer);
				resolve(value);
			};
			this.waiting.push(waiter);
		});
	}

	// What has arrived and not been taken.
	get pending(): readonly T[] {
		return this.items;
	}
}

type StreamOptions = { secret?: string; headers?: Record<string, string>; env?: Partial<Record<keyof Env, unknown>> };

function streamRequest(path: string, options: StreamOptions, websocket: boolean) {
	const headers = new Headers(options.headers);
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	if (options.secret) headers.set("authorization", options.secret);
	if (websocket) headers.set("upgrade", "websocket");
	const request = new Request(BASE + path, { headers });
	return options.env ? fetchWithEnv(request, options.env) : exports.default.fetch(request);
}

// An SSE stream through the Worker, read as a client reads it: events (id, event, parsed data)
// and comments in order, `text` all the bytes so far, `ended` once the body ends. With `paused`,
// nothing is read until `resume()`: a reader that does not keep up.
export async function openSse(path: string, options: StreamOptions & { paused?: boolean } = {}) {
	const res = await streamRequest(path, options, false);
	const arrivals = new Arrivals<StreamEvent>();
	let text = "";
	let ended = false;
	let resume!: () => void;
	const resumed = new Promise<void>((resolve) => (resume = resolve));
	if (!options.paused) resume();
	const reader = res.body!.getReader();
	const done = (async () => {
		await resumed;
		const decoder = new TextDecoder();
		let buffer = "";
		for (;;) {
			const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
			if (chunk.done) break;
			const part = decoder.decode(chunk.value, { stream: true });
			text += part;
			buffer += part;
			for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
				arrivals.push(parseSse(buffer.slice(0, end)));
				buffer = buffer.slice(end + 2);
			}
		}
		ended = true;
	})();
	return {
		res,
		next: (what = "an SSE event", timeoutMs?: number) => arrivals.next(what, timeoutMs),
		// The next event that is not a comment or the `retry` preamble.
		async event(what = "an SSE event", timeoutMs?: number): Promise<StreamEvent> {
			for (;;) {
				const item = await arrivals.next(what, timeoutMs);
				if (item.comment === undefined && (item.event !== undefined || item.data !== undefined)) return item;
			}
		},
		get pending() {
			return arrivals.pending.filter((item) => item.comment === undefined && item.event !== undefined);
		},
		get text() {
			return text;
		},
		get ended() {
			return ended;
		},
		done,
		resume,
		close: () => reader.cancel().catch(() => undefined),
	};
}

function parseSse(block: string): StreamEvent {
	const out: StreamEvent = {};
	for (const line of block.split("\n")) {
		if (line.startsWith(":")) out.comment = line.slice(1).trim();
		else if (line.startsWith("id: ")) out.id = line.slice(4);
		else if (line.startsWith("event: ")) out.event = line.slice(7);
		else if (line.startsWith("data: ")) out.data = JSON.parse(line.slice(6));
	}
	return out;
}

// A WebSocket stream through the Worker: `next()` answers each frame parsed, `closed` the close
// frame's code and reason. A refusal has no socket: `res` is the JSON answer.
export async function openSocket(path: string, options: StreamOptions = {}) {
	const res = await streamRequest(path, options, true);
	const ws = res.webSocket;
	const arrivals = new Arrivals<any>();
	let resolveClosed!: (value: { code: number; reason: string }) => void;
	const closed = new Promise<{ code: number; reason: string }>((resolve) => (resolveClosed = resolve));
	if (ws) {
		ws.accept();
		ws.addEventListener("message", (event: MessageEvent) =>
			arrivals.push(typeof event.data === "string" && event.data !== "pong" ? JSON.parse(event.data) : event.data),
		);
		ws.addEventListener("close", (event: CloseEvent) => resolveClosed({ code: event.code, reason: event.reason }));
		onTestFinished(() => {
			try {
				ws.close(1000, "test over");
			} catch {}
		});
	}
	return {
		res,
		ws,
		next: (what = "a stream frame", timeoutMs?: number) => arrivals.next(what, timeoutMs),
		get pending() {
			return arrivals.pending;
		},
		closed,
		send: (data: string) => ws!.send(data),
		ack: (id: string) => ws!.send(JSON.stringify({ type: "ack", id })),
	};
}

export const streamPath = (topics: string, query = "") =>
	`/notifications/stream?topics=${topics}${query ? `&${query}` : ""}`;

// An entry that publishes every change to `topics`, written (or, when it exists, updated) on
// `twin`'s personal ledger.
export function publish(secret: string, twin: string, name: string, value: unknown, topics: string[]) {
	return publishEntries(secret, twin, { [name]: value }, topics);
}

// Entries (name to value) that publish every change to `topics`, written in one request, or, when
// they exist, their values updated in one.
export async function publishEntries(secret: string, twin: string, values: Record<string, unknown>, topics: string[]) {
	const publish = Object.fromEntries(topics.map((topic) => [topic, "true"]));
	const entries = (withPublish: boolean) =>
		Object.fromEntries(
			Object.entries(values).map(([name, value]) => [name, withPublish ? { value, publish } : { value }]),
		);
	const added = await call("POST", ledger(twin), { secret, body: { entries: entries(true) } });
	if (added.status === 201) return added;
	const updated = await call("PATCH", ledger(twin, "personal", "/value"), {
		secret,
		body: { entries: entries(false) },
	});
	expect(updated.status, JSON.stringify(updated.body)).toBe(200);
	return updated;
}

// Everything the stream object sent a socket so far: the runtime answers `ping` after every
// frame sent before it (at once, without the object: what an acknowledgement makes the object
// send may come later).
export async function drained(socket: Awaited<ReturnType<typeof openSocket>>) {
	socket.send("ping");
	const frames = [];
	for (;;) {
		const frame = await socket.next("the frames before pong");
		if (frame === "pong") return frames;
		frames.push(frame);
	}
}

// `count` messages of `topic` on `twin`, written into the account's stream outbox as its
// writes would write them (each `bytes` of value or more), and handed to its stream object by
// one real write publishing to `drain-topic`.
export async function seedStreamMessages(admin: Account, twin: string, topic: string, count: number, bytes = 0) {
	const statement = env.DB.prepare(
		"INSERT INTO stream_outbox (account, twin, trigger, topics, entries, at) VALUES (?, ?, ?, ?, ?, ?)",
	);
	const at = Date.now() / 1000;
	const value = "x".repeat(bytes);
	for (let i = 0; i < count; i += 500) {
		const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) =>
			statement.bind(
				admin.account,
				twin,
				"ledger.entry.updated",
				JSON.stringify({ [topic]: ["seeded"] }),
				JSON.stringify({ seeded: { new_value: value ? `${i + j}:${value}` : i + j, old_value: null, changed_ts: at } }),
				at,
			),
		);
		await env.DB.batch(rows);
	}
	await publish(admin.secret, twin, "drain", crypto.randomUUID(), ["drain-topic"]);
}

// Runs `work` on the account's stream object itself (its log's storage, its sockets).
export function inStreamObject<T>(
	account: string,
	work: (instance: StreamObject, state: DurableObjectState) => T | Promise<T>,
) {
	return inImplementation(env.STREAMS.getByName(account), work);
}

// ---- Stickers and the account log ----

export const stickerPath = (twin: string, color?: string, query = "") =>
	`/twins/${twin}/stickers${color === undefined ? "" : `/${color}`}${query}`;

export type StickerIn = {
	note?: string | null;
	recipients: string[];
	validity_ts?: number;
	publish?: Record<string, string | string[]>;
};

// Puts stickers of the caller's account on `twin`, expecting 201.
export async function putStickers(secret: string, twin: string, stickers: Record<string, StickerIn>) {
	const res = await call("POST", stickerPath(twin), { secret, body: { stickers } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.stickers as Record<
		string,
		{
			note: string | null;
			recipients: string[];
			validity_ts: number;
			created_ts: number;
			publish: Record<string, string[]>;
		}
	>;
}

// Every line of the account's log, read through get_log page by page.
export async function logLines(secret: string): Promise<string[]> {
	const lines: string[] = [];
	let fragment: string | null = null;
	for (;;) {
		const res = await call("GET", `/log${fragment ? `?fragment=${fragment}` : ""}`, { secret });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		lines.push(...res.body.messages);
		if (res.body.messages.length < 100) return lines;
		fragment = res.body.fragment;
	}
}

// Restarts the account's object as an eviction would (its storage, alarm included, kept): the
// next call meets a new instance.
export async function restartAccountObject(account: string) {
	const stub = env.ACCOUNTS.getByName(account);
	const mark = Symbol.for("before-restart");
	await runInDurableObject(stub, (instance: AccountDO) => {
		(instance as unknown as Record<symbol, boolean>)[mark] = true;
	});
	await evictDurableObject(stub);
	const fresh = await runInDurableObject(
		stub,
		(instance: AccountDO) => !(instance as unknown as Record<symbol, boolean>)[mark],
	);
	expect(fresh).toBe(true);
}

// ---- Usage ----

import { USAGE_FIELDS, type UsageField, type UsageRow } from "../src/base/usage";

export type UsageBuckets = Record<string, Record<UsageField, number>>;

// The usage answer of `path` (/usage or /usage/{user}, with its query), read by `secret`.
export async function usageOf(secret: string, path = "/usage"): Promise<UsageBuckets> {
	const res = await call("GET", path, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.usage;
}

// Every bucket's counts added up, field by field.
export function usageTotal(buckets: UsageBuckets): Record<UsageField, number> {
	const total = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
	for (const bucket of Object.values(buckets)) for (const field of USAGE_FIELDS) total[field] += bucket[field];
	return total;
}

// What a test expects usage to count: `call` for a user's requests, each one tallied under
// its credential with the figures of its Server-Timing, as the Worker counts them.
export function usageTally() {
	const tallies = new Map<string, Record<UsageField, number>>();
	const of = (secret: string) => {
		let tally = tallies.get(secret);
		if (!tally) {
			tally = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
			tallies.set(secret, tally);
		}
		return tally;
	};
	return {
		async call(method: string, path: string, options: Parameters<typeof call>[2] & { secret: string }) {
			const res = await call(method, path, options);
			const tally = of(options.secret);
			tally.rest_count += 1;
			tally.db_read_cost += d1Cost(res, "rows_read");
			tally.db_write_cost += d1Cost(res, "rows_written");
			if (method === "POST" && path === "/twins" && res.status === 201) tally.twins_created += 1;
			if (method === "DELETE" && /^\/twins\/[^/]+$/.test(path) && res.status === 200) tally.twins_terminated += 1;
			return res;
		},
		// The tally of some credentials together (one user's secret and tokens, or an account's users).
		of(...secrets: string[]) {
			const sum = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
			for (const secret of secrets) for (const field of USAGE_FIELDS) sum[field] += of(secret)[field];
			return sum;
		},
	};
}

// The hourly rows the account's object holds for a user (null: the account), read from its
// storage directly: what has arrived, without a usage read handing anything over.
export function storedUsage(account: string, user: string | null) {
	// Through the implementation: building it makes the object's tables, as its first call would.
	return inImplementation(env.ACCOUNTS.getByName(account), (_instance, state) =>
		state.storage.sql
			.exec<Record<string, number>>("SELECT * FROM usage WHERE subject = ? ORDER BY hour", user ?? "")
			.toArray(),
	);
}

// Hourly rows put into the account's object as an isolate's flush would (hours of the past).
export function addStoredUsage(account: string, rows: UsageRow[]) {
	return env.ACCOUNTS.getByName(account).addUsage(rows);
}

// The account's object's alarm, run as it fires at its time: every timer due by then runs
// (src/account/timers.ts). A test that moved stored times back (an expired cursor, a lease)
// so stands for the clock reaching the alarm.
export async function fireAccountAlarm(account: string): Promise<boolean> {
	const stub = env.ACCOUNTS.getByName(account);
	await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
		const alarm = await state.storage.getAlarm();
		if (alarm !== null) state.storage.sql.exec("UPDATE timers SET due_ms = ? WHERE due_ms <= ?", Date.now(), alarm);
	});
	return runDurableObjectAlarm(stub);
}

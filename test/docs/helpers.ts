// What the docs tests share: patterned bytes and their hash, upload URLs and the PUT of their
// bytes, docs attached to twins, download URLs and their GET, and the D1 rows and counts behind
// them, read or changed directly.
import { exports } from "cloudflare:workers";
import { expect } from "vitest";
import { call, fetchWithEnv, randomAddress } from "../support/requests";
import { dbOf } from "../support/shards";

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
	env?: Partial<Record<keyof Env, unknown>>,
): Promise<Transfer> {
	const headers = new Headers(init.headers);
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	const request = new Request(url, { ...init, headers });
	const response = await (env ? fetchWithEnv(request, env) : exports.default.fetch(request));
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
	env?: Partial<Record<keyof Env, unknown>>,
) {
	return transfer(url, { method: "PUT", body, headers }, env);
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
	const row = await dbOf(account)
		.prepare("SELECT doc_bytes FROM accounts WHERE uuid = ?")
		.bind(account)
		.first<{ doc_bytes: number }>();
	return row!.doc_bytes;
}

// The R2 key a live upload's bytes went to (null before its PUT), undefined once the row is gone.
export async function uploadObject(handler: string): Promise<string | null | undefined> {
	const row = await dbOf(handler)
		.prepare("SELECT object FROM uploads WHERE handler = ?")
		.bind(handler)
		.first<{ object: string | null }>();
	return row === null ? undefined : row.object;
}

// The R2 key a doc's bytes live under.
export async function docObject(twin: string, name: string): Promise<string> {
	const row = await dbOf(twin)
		.prepare("SELECT object FROM docs WHERE twin = ? AND name = ?")
		.bind(twin, name)
		.first<{ object: string }>();
	if (!row) throw new Error(`no doc ${name} on ${twin}`);
	return row.object;
}

// Ends an upload URL's validity now, as if its time had passed, without waiting for it. Its
// row stays until the account's alarm, due at the validity it was given, removes it.
export async function expireUpload(handler: string) {
	const { meta } = await dbOf(handler)
		.prepare("UPDATE uploads SET validity_ts = ? WHERE handler = ?")
		.bind(Date.now() / 1000 - 1, handler)
		.run();
	expect(meta.changes).toBe(1);
}

// R2 as the Worker meets it, for a PUT whose stream breaks on purpose (a body that ends short of
// its Content-Length, a PUT that lost its URL): the stand-in reads the stream whole first and
// rejects as R2 does when it breaks, and otherwise stores the bytes in the real bucket. (A broken
// stream that reaches the local R2 simulator makes it report an uncaught rejection of its own.)
// `attempted` and `deleted` say what the Worker tried to put and then deleted.
export function bucketReadingWhole(bucket: R2Bucket) {
	const attempted: string[] = [];
	const deleted: string[] = [];
	const stand: Partial<R2Bucket> = {
		put: (async (key: string, value: Parameters<R2Bucket["put"]>[1]) => {
			attempted.push(key);
			const bytes = value instanceof ReadableStream ? new Uint8Array(await new Response(value).arrayBuffer()) : value;
			return bucket.put(key, bytes);
		}) as R2Bucket["put"],
		async delete(keys: string | string[]) {
			deleted.push(...(Array.isArray(keys) ? keys : [keys]));
			return bucket.delete(keys);
		},
		head: (key: string) => bucket.head(key),
		get: ((key: string, options?: R2GetOptions) => bucket.get(key, options)) as R2Bucket["get"],
	};
	return { bucket: stand as R2Bucket, attempted, deleted };
}

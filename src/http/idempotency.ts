import type { Claim, Quota } from "../db/idempotency";
import { utf8Bytes } from "../base/json";
import { ApiError } from "../base/errors";
import { toHex } from "../base/crypto";
import { now } from "../base/time";
import type { Operation } from "../operations/operation";
import type { Caller } from "../base/caller";
import { errorResponse } from "./errors";
import { loadOnce } from "../base/load-once";
import { mediaType } from "./body";

// Idempotency-Key on POST and PATCH (docs/operations.md, "Idempotent requests"): the first
// request with a key runs and its answer is kept for 24 hours; the same request again gets that
// answer, replayed, and nothing runs twice. The key is claimed before the handler runs, so a
// retry that arrives while the first is running is told so (409107) instead of running beside it.

const KEY = /^[\x21-\x7e]{1,255}$/;
// Larger answers are not kept (a D1 row holds at most 2 MB, and a character of UTF-8 takes at
// most 3 bytes): such a request runs again when retried. No answer of a write comes near it.
const MAX_KEPT_CHARACTERS = 512 * 1024;

// The request's key, checked, when the operation keeps replays; undefined when there is none
// or the route ignores it. Routes without a user's credential, other methods, and the
// operations whose answer carries a credential or a key ignore it.
export function presentedKey(request: Request, operation: Operation): string | undefined {
	if (request.method !== "POST" && request.method !== "PATCH") return undefined;
	if (operation.auth !== "secret" || operation.replays === false) return undefined;
	const key = request.headers.get("idempotency-key");
	if (key === null) return undefined;
	if (!KEY.test(key)) {
		throw new ApiError("validation", {
			description: "Idempotency-Key must be 1 to 255 visible ASCII characters",
			details: [{ path: "Idempotency-Key", message: "Must be 1 to 255 visible ASCII characters (no spaces)" }],
		});
	}
	return key;
}

// Whether this request's body lets its answer be kept (webhook_subscribe with a client_secret
// answers a server_secret: never kept).
export function keepsReplay(operation: Operation, body: unknown): boolean {
	return typeof operation.replays !== "function" || operation.replays(body);
}

// What makes two requests the same: method, path with query, the media type of content-type,
// If-Match and the body's bytes, sent by the same user under the same role and dictionary. The
// same bytes mean a replacement or a merge patch by their media type, and a write under another
// If-Match is another write. A key is the account's, but an answer is its caller's: another
// user, or the same one now seeing through another role or DICT, must not get a kept answer that
// shows what it may not see (docs/permission-model.md). To such a request the key is another
// request's: 422101.
export async function fingerprintOf(
	request: Request,
	body: Uint8Array | undefined,
	caller: Pick<Caller, "user" | "role" | "dict">,
): Promise<string> {
	const url = new URL(request.url);
	const who = JSON.stringify([caller.user, caller.role, caller.dict ?? null]);
	const how = JSON.stringify([mediaType(request), request.headers.get("if-match")]);
	const head = new TextEncoder().encode(`${who}\n${how}\n${request.method} ${url.pathname}${url.search}\n`);
	const bytes = new Uint8Array(head.length + (body?.length ?? 0));
	bytes.set(head);
	if (body) bytes.set(body, head.length);
	return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}

// The key's table loads with the first request that sends a key: most requests send none.
const loadStore = loadOnce(async () => ({ ...(await import("../db/idempotency")), ...(await import("../db/client")) }));

type Once = { d1: D1Database; account: string; key: string; fingerprint: string; trace: string; quota: Quota };

// What an account may keep within the 24 hours: MAX_IDEMPOTENCY_KEYS answered keys and
// MAX_IDEMPOTENCY_BYTES of their bodies.
export function quotaOf(env: Env): Quota {
	return { keys: Number(env.MAX_IDEMPOTENCY_KEYS), bytes: Number(env.MAX_IDEMPOTENCY_BYTES) };
}

// Runs `handler` once for the key: a replay of the kept answer when the same request ran
// before, 422101 when the key ran another request, 409107 while it is still running, and
// 409211, running nothing, when the key is new and the account's kept answers fill its quota.
export async function runOnce(o: Once, handler: () => Promise<Response>): Promise<Response> {
	const { claimKey, releaseKey, settleKey, dbOf } = await loadStore();
	const db = dbOf(o);
	const claim: Claim = { account: o.account, key: o.key, fingerprint: o.fingerprint, trace: o.trace, at: now() };
	const row = await claimKey(db, claim, o.quota);
	if (row === undefined) {
		const description = `The account keeps ${o.quota.keys} answers or ${o.quota.bytes} bytes of answers of the last 24 hours, its limit (MAX_IDEMPOTENCY_KEYS, MAX_IDEMPOTENCY_BYTES); nothing was done`;
		throw new ApiError("idempotency_quota", { description });
	}
	if (row.trace !== claim.trace) {
		if (row.fingerprint !== claim.fingerprint) {
			throw new ApiError("idempotency_mismatch", {
				details: [{ path: "Idempotency-Key", message: "Send a new key for a new request" }],
			});
		}
		if (row.status === null) throw new ApiError("idempotency_in_flight", { headers: { "retry-after": "1" } });
		const headers = new Headers({
			"content-type": row.content_type ?? "application/json",
			"idempotent-replayed": "true",
		});
		if (row.etag !== null) headers.set("etag", row.etag);
		return new Response(row.body, { status: row.status, headers });
	}
	let response: Response;
	try {
		response = await handler();
	} catch (error) {
		// A refusal the handler decided is the request's answer, kept like a success; a failure
		// of ours or a rate limit leaves the key free for the retry, and so does a failed
		// precondition (412): the client retries with a fresh If-Match under the same key.
		if (!(error instanceof ApiError) || error.status >= 500 || error.status === 429 || error.status === 412) {
			await releaseKey(db, claim).catch(() => undefined);
			throw error;
		}
		response = errorResponse(error, o.trace);
	}
	if (response.status >= 500 || response.status === 429) {
		await releaseKey(db, claim);
		return response;
	}
	const body = await response.text();
	if (body.length > MAX_KEPT_CHARACTERS) await releaseKey(db, claim);
	else {
		const kept = {
			status: response.status,
			content_type: response.headers.get("content-type"),
			etag: response.headers.get("etag"),
			body,
			bytes: utf8Bytes(body),
		};
		await settleKey(db, claim, kept);
	}
	return new Response(body, { status: response.status, headers: response.headers });
}

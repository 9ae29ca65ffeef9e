import { blake2b } from "@noble/hashes/blake2.js";
import { base64Url, toHex } from "../base/crypto";
import { open, seal } from "../base/seal";
import type { SubscriptionRow } from "../db/subscriptions";

const encoder = new TextEncoder();

// The key of both the message hash and the Standard Webhooks signature: the UTF-8 bytes of
// client_secret followed by server_secret (16 + 16 characters, 32 bytes).
export function signingKey(clientSecret: string, serverSecret: string): Uint8Array {
	return encoder.encode(clientSecret + serverSecret);
}

// Keyed BLAKE2b-256 over the compact JSON of the message without its hash, as lowercase hex.
export function messageHash(message: object, key: Uint8Array): string {
	return toHex(blake2b(encoder.encode(JSON.stringify(message)), { key, dkLen: 32 }));
}

// Standard Webhooks (webhook-id, webhook-timestamp, webhook-signature) so off-the-shelf
// verifiers work; their secret is "whsec_" + base64 of the same key. With several keys (the
// new and the previous one after a rotation) the header carries one signature per key, in that
// order, space-separated, as the specification allows.
export async function standardWebhookHeaders(id: string, timestamp: number, body: string, keys: Uint8Array[]) {
	const headers: Record<string, string> = { "webhook-id": id, "webhook-timestamp": String(timestamp) };
	const signatures: string[] = [];
	for (const key of keys) {
		const hmac = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
		const signature = await crypto.subtle.sign("HMAC", hmac, encoder.encode(`${id}.${timestamp}.${body}`));
		signatures.push(`v1,${toBase64(new Uint8Array(signature))}`);
	}
	if (signatures.length) headers["webhook-signature"] = signatures.join(" ");
	return headers;
}

function toBase64(bytes: Uint8Array): string {
	const url = base64Url(bytes).replaceAll("-", "+").replaceAll("_", "/");
	return url.padEnd(Math.ceil(url.length / 4) * 4, "=");
}

// For 24 hours after a rotation, messages carry a signature with the previous key too, so a
// receiver can switch to the new secret when it likes within that day.
export const ROTATION_OVERLAP_SECONDS = 86_400;

// The keys to sign with at `at`: the current one first, then the previous one while it lasts.
// A subscription without a client_secret has none.
export async function signingKeys(env: Env, row: SubscriptionRow, at: number): Promise<Uint8Array[]> {
	const keys: Uint8Array[] = [];
	if (row.sealed_key) keys.push(new TextEncoder().encode(await open(env, row.uuid, "key", row.sealed_key)));
	if (keys.length && row.sealed_previous_key && (row.previous_key_until ?? 0) > at) {
		keys.push(new TextEncoder().encode(await open(env, row.uuid, "key", row.sealed_previous_key)));
	}
	return keys;
}

export function sealKey(env: Env, subscription: string, clientSecret: string, serverSecret: string) {
	return seal(env, subscription, "key", new TextDecoder().decode(signingKey(clientSecret, serverSecret)));
}

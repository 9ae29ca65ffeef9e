const encoder = new TextEncoder();

export async function sha256Hex(text: string): Promise<string> {
	const digest = await crypto.subtle.digest("SHA-256", encoder.encode(text));
	return toHex(new Uint8Array(digest));
}

export function toHex(bytes: Uint8Array): string {
	return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export function base64Url(bytes: Uint8Array): string {
	let binary = "";
	for (const b of bytes) binary += String.fromCharCode(b);
	return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

// Either base64 alphabet, padding optional; undefined for anything else.
export function fromBase64Url(text: string): Uint8Array<ArrayBuffer> | undefined {
	try {
		return Uint8Array.from(atob(text.replaceAll("-", "+").replaceAll("_", "/")), (c) => c.charCodeAt(0));
	} catch {
		return undefined;
	}
}

export function randomBase64Url(byteCount: number): string {
	return base64Url(crypto.getRandomValues(new Uint8Array(byteCount)));
}

const PIN_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

// Rejection sampling keeps every character equally likely (256 is not a multiple of 36).
export function randomPin(length: number): string {
	let pin = "";
	while (pin.length < length) {
		for (const b of crypto.getRandomValues(new Uint8Array(length))) {
			if (b < 252 && pin.length < length) pin += PIN_ALPHABET[b % 36];
		}
	}
	return pin;
}

export function timingSafeEqualText(a: string, b: string): boolean {
	const left = encoder.encode(a);
	const right = encoder.encode(b);
	if (left.byteLength !== right.byteLength) return false;
	return crypto.subtle.timingSafeEqual(left, right);
}

// A User Secret: 48 random bytes as 64 characters of URL-safe base64, the first of them its
// account's bucket (docs/scaling.md). Only the hash is stored.
export async function newUserSecret(bucket: number) {
	const bytes = crypto.getRandomValues(new Uint8Array(48));
	bytes[0] = bucket;
	const secret = base64Url(bytes);
	return { secret, hash: await sha256Hex(secret), fingerprint: secret.slice(-4) };
}

// An HMAC-SHA-256 key derived (HKDF-SHA-256) from a Worker secret for one purpose (`info`), so
// that one secret signs several kinds of value and none passes for another. One per purpose,
// kept for the isolate's life; a changed secret derives anew. The key is kept, never the promise
// of it: a request (or an object) must not await a promise another one made, whose I/O context
// it is not (see base/load-once.ts); calls before the first derivation ends each derive.
const derivedKeys = new Map<string, { secret: string; key: CryptoKey }>();

export async function derivedHmacKey(secret: string, info: string): Promise<CryptoKey> {
	const held = derivedKeys.get(info);
	if (held?.secret === secret) return held.key;
	const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
	const key = await crypto.subtle.deriveKey(
		{ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: encoder.encode(info) },
		material,
		{ name: "HMAC", hash: "SHA-256", length: 256 },
		false,
		["sign", "verify"],
	);
	derivedKeys.set(info, { secret, key });
	return key;
}

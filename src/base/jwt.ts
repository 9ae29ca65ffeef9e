import { base64Url, fromBase64Url } from "./crypto";

// Compact JWTs (RFC 7519) signed with HMAC-SHA256 under one key, verified by WebCrypto. Only
// this service signs and verifies them, so exactly one header is accepted: any other `alg`
// (`none` included), `typ`, or an extra field is not a token of this service.
const HEADER = '{"alg":"HS256","typ":"JWT"}';
const HEADER_SEGMENT = base64Url(new TextEncoder().encode(HEADER));
export const MAX_TOKEN_LENGTH = 4096;
// The signing key (TOKEN_KEY): a shorter one would make tokens look safer than they are.
export const MIN_TOKEN_KEY_LENGTH = 32;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
	let key = keys.get(secret);
	if (!key) {
		key = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign", "verify"]);
		keys.clear();
		keys.set(secret, key);
	}
	return key;
}

export async function signJwt(secret: string, payload: object): Promise<string> {
	const body = `${HEADER_SEGMENT}.${base64Url(encoder.encode(JSON.stringify(payload)))}`;
	const signature = await crypto.subtle.sign("HMAC", await hmacKey(secret), encoder.encode(body));
	return `${body}.${base64Url(new Uint8Array(signature))}`;
}

// Whether a credential has the shape of a token: three base64url segments joined by dots.
export function looksLikeJwt(text: string): boolean {
	const parts = text.split(".");
	return parts.length === 3 && parts.every((part) => SEGMENT.test(part));
}

// The payload of a token this key signed, or undefined: too long, another header, a bad
// signature, or a payload that is not a JSON object. The signature is checked before the
// payload is parsed, so nothing an attacker wrote is read unless the key signed it.
export async function verifyJwt(secret: string, token: string): Promise<Record<string, unknown> | undefined> {
	if (token.length > MAX_TOKEN_LENGTH || !looksLikeJwt(token)) return undefined;
	const [header, payload, signature] = token.split(".") as [string, string, string];
	if (header !== HEADER_SEGMENT) return undefined;
	const bytes = fromBase64Url(signature);
	if (!bytes) return undefined;
	const valid = await crypto.subtle.verify("HMAC", await hmacKey(secret), bytes, encoder.encode(`${header}.${payload}`));
	if (!valid) return undefined;
	try {
		const parsed: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(fromBase64Url(payload)));
		return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : undefined;
	} catch {
		return undefined;
	}
}

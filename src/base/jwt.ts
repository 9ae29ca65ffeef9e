import { loadOnce } from "./load-once";

// The service's own User Tokens: compact JWTs (RFC 7519) signed with HMAC-SHA256 under one key
// (TOKEN_KEY). jose signs and verifies them, as it verifies identity providers' ID tokens
// (foreign-jwt.ts): only HS256 is accepted here, so `none` or a public-key algorithm never
// reaches the key. jose comes with the first token, not with every isolate.
export const loadJose = loadOnce(() => import("./jose"));

export const MAX_TOKEN_LENGTH = 4096;
// The signing key (TOKEN_KEY): a shorter one would make tokens look safer than they are.
export const MIN_TOKEN_KEY_LENGTH = 32;
const SEGMENT = /^[A-Za-z0-9_-]+$/;

// The key as WebCrypto holds it, imported once per isolate and key text (the value is kept,
// never a promise another request made).
let imported: { secret: string; key: CryptoKey } | undefined;

async function hmacKey(secret: string): Promise<CryptoKey> {
	if (imported?.secret === secret) return imported.key;
	const key = await crypto.subtle.importKey(
		"raw",
		new TextEncoder().encode(secret),
		{ name: "HMAC", hash: "SHA-256" },
		false,
		["sign", "verify"],
	);
	imported = { secret, key };
	return key;
}

export async function signJwt(secret: string, payload: Record<string, unknown>): Promise<string> {
	const { SignJWT } = await loadJose();
	return new SignJWT(payload).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(await hmacKey(secret));
}

// Whether a credential has the shape of a token: three base64url segments joined by dots.
export function looksLikeJwt(text: string): boolean {
	const parts = text.split(".");
	return parts.length === 3 && parts.every((part) => SEGMENT.test(part));
}

// The payload of a token this key signed, or undefined: too long, another algorithm, a bad
// signature, or a payload that is not a JSON object. jose checks the signature before it reads
// the payload. An expired token's payload is answered too: its `exp` is the caller's to judge
// (an expired credential is answered otherwise than an unknown one).
export async function verifyJwt(secret: string, token: string): Promise<Record<string, unknown> | undefined> {
	if (token.length > MAX_TOKEN_LENGTH || !looksLikeJwt(token)) return undefined;
	const { jwtVerify, errors } = await loadJose();
	try {
		const { payload } = await jwtVerify(token, await hmacKey(secret), { algorithms: ["HS256"] });
		return payload;
	} catch (error) {
		// Raised only once the signature held.
		if (error instanceof errors.JWTExpired) return error.payload;
		return undefined;
	}
}

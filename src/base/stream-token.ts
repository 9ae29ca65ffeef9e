import { base64Url, derivedHmacKey, fromBase64Url } from "./crypto";
import { MIN_WEBHOOK_KEY_LENGTH } from "./seal";

// Stream tokens: what a browser's EventSource, which cannot set a header, puts in the
// `access_token` parameter of stream_notifications, and nowhere else. `<account>.<user>.<secret
// created ms>.<validity ms>.<mac>`, the mac an HMAC-SHA-256 of those four under a key derived
// from WEBHOOK_KEY. Nothing is stored, and the mac is checked before anything is read, so a
// forged token costs no D1 read. The user's secret as it is now must still be the one created
// then: deleted or replaced (a redeemed PIN), the token dies with it.

const encoder = new TextEncoder();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MILLIS = /^\d{1,15}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;
const INFO = "stream-token";

export type StreamClaim = { account: string; user: string; secretCreatedMs: number; validityMs: number };

function key(secret: string | undefined): Promise<CryptoKey> | undefined {
	return secret && secret.length >= MIN_WEBHOOK_KEY_LENGTH ? derivedHmacKey(secret, INFO) : undefined;
}

const text = (claim: StreamClaim) => `${claim.account}.${claim.user}.${claim.secretCreatedMs}.${claim.validityMs}`;

// Undefined when WEBHOOK_KEY is unset or too short.
export async function signStreamToken(secret: string | undefined, claim: StreamClaim): Promise<string | undefined> {
	const signing = key(secret);
	if (!signing) return undefined;
	const mac = await crypto.subtle.sign("HMAC", await signing, encoder.encode(text(claim)));
	return `${text(claim)}.${base64Url(new Uint8Array(mac))}`;
}

// The claim of a token this key signed, or undefined: another shape, or a mac that does not
// hold. Its expiry, and whether the secret is still the one it names, are the caller's to check.
export async function verifyStreamToken(secret: string | undefined, token: string): Promise<StreamClaim | undefined> {
	const parts = token.split(".");
	if (parts.length !== 5) return undefined;
	const [account, user, created, validity, mac] = parts as [string, string, string, string, string];
	if (!UUID.test(account) || !UUID.test(user) || !MILLIS.test(created) || !MILLIS.test(validity) || !MAC.test(mac)) return undefined;
	const signing = key(secret);
	const bytes = fromBase64Url(mac);
	if (!signing || !bytes) return undefined;
	const claim = { account, user, secretCreatedMs: Number(created), validityMs: Number(validity) };
	return (await crypto.subtle.verify("HMAC", await signing, bytes, encoder.encode(text(claim)))) ? claim : undefined;
}

import { base64Url, derivedHmacKey, fromBase64Url } from "../base/crypto";
import { MIN_WEBHOOK_KEY_LENGTH } from "../base/seal";

// A download URL's handler: `<doc uuid>.<expiry ms>.<mac>`, the mac an HMAC-SHA-256 of
// `account|doc uuid|expiry` under a key derived from WEBHOOK_KEY. Issuing one stores nothing;
// it serves only the doc row of that uuid, so deleting or replacing the doc ends it.

const encoder = new TextEncoder();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// Undefined when WEBHOOK_KEY is unset or too short: no link can be issued or honoured.
function linkKey(secret: string | undefined): Promise<CryptoKey> | undefined {
	if (!secret || secret.length < MIN_WEBHOOK_KEY_LENGTH) return undefined;
	return derivedHmacKey(secret, "docs-download");
}

export const canSign = (secret: string | undefined) => linkKey(secret) !== undefined;

const signed = (account: string, doc: string, expiry: number) => encoder.encode(`${account}|${doc}|${expiry}`);

export async function signDownload(secret: string | undefined, account: string, doc: string, expiryMs: number): Promise<string | undefined> {
	const key = linkKey(secret);
	if (!key) return undefined;
	const mac = await crypto.subtle.sign("HMAC", await key, signed(account, doc, expiryMs));
	return `${doc}.${expiryMs}.${base64Url(new Uint8Array(mac))}`;
}

// The doc a handler names, when its mac holds for `account` and it has not expired.
export async function verifyDownload(secret: string | undefined, account: string, handler: string, nowMs: number): Promise<string | undefined> {
	const [doc, expiry, mac, ...rest] = handler.split(".");
	if (rest.length || !doc || !UUID.test(doc) || !/^\d{1,15}$/.test(expiry ?? "") || !mac) return undefined;
	const bytes = fromBase64Url(mac);
	const key = linkKey(secret);
	if (!bytes || !key) return undefined;
	const valid = await crypto.subtle.verify("HMAC", await key, bytes, signed(account, doc, Number(expiry)));
	return valid && Number(expiry) > nowMs ? doc : undefined;
}

import { base64Url, derivedHmacKey, fromBase64Url } from "../base/crypto";
import { MIN_WEBHOOK_KEY_LENGTH } from "../base/seal";

// A download URL's handler: `<doc uuid>.<expiry ms>.<mac>`, the mac an HMAC-SHA-256 of
// `account|doc uuid|expiry` under a key derived from WEBHOOK_KEY; one that asks to be shown
// inline is `<doc uuid>.<expiry ms>.inline.<mac>`, the mac over `account|doc uuid|expiry|inline`,
// so nobody turns an attachment URL into an inline one. Issuing one stores nothing; it serves
// only the doc row of that uuid, so deleting or replacing the doc ends it.

const encoder = new TextEncoder();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// Undefined when WEBHOOK_KEY is unset or too short: no link can be issued or honoured.
function linkKey(secret: string | undefined): Promise<CryptoKey> | undefined {
	if (!secret || secret.length < MIN_WEBHOOK_KEY_LENGTH) return undefined;
	return derivedHmacKey(secret, "docs-download");
}

export const canSign = (secret: string | undefined) => linkKey(secret) !== undefined;

export type Disposition = "attachment" | "inline";

const signed = (account: string, doc: string, expiry: number, disposition: Disposition) =>
	encoder.encode(`${account}|${doc}|${expiry}${disposition === "inline" ? "|inline" : ""}`);

export async function signDownload(
	secret: string | undefined,
	account: string,
	doc: string,
	expiryMs: number,
	disposition: Disposition = "attachment",
): Promise<string | undefined> {
	const key = linkKey(secret);
	if (!key) return undefined;
	const mac = await crypto.subtle.sign("HMAC", await key, signed(account, doc, expiryMs, disposition));
	return `${doc}.${expiryMs}.${disposition === "inline" ? "inline." : ""}${base64Url(new Uint8Array(mac))}`;
}

// The doc a handler names and how it asks to be served, when its mac holds for `account` and
// it has not expired.
export async function verifyDownload(
	secret: string | undefined,
	account: string,
	handler: string,
	nowMs: number,
): Promise<{ doc: string; disposition: Disposition } | undefined> {
	const parts = handler.split(".");
	const disposition: Disposition = parts.length === 4 && parts[2] === "inline" ? "inline" : "attachment";
	if (parts.length !== (disposition === "inline" ? 4 : 3)) return undefined;
	const [doc, expiry] = parts;
	const mac = parts.at(-1);
	if (!doc || !UUID.test(doc) || !/^\d{1,15}$/.test(expiry ?? "") || !mac) return undefined;
	const bytes = fromBase64Url(mac);
	const key = linkKey(secret);
	if (!bytes || !key) return undefined;
	const valid = await crypto.subtle.verify("HMAC", await key, bytes, signed(account, doc, Number(expiry), disposition));
	return valid && Number(expiry) > nowMs ? { doc, disposition } : undefined;
}

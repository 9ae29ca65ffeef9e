import { base64Url, fromBase64Url } from "./crypto";
import { ApiError } from "./errors";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

// WEBHOOK_KEY is a Worker secret; too short a one would make the sealing look safer than it is.
export const MIN_WEBHOOK_KEY_LENGTH = 32;

// Secrets a subscription must keep (its confirmation token, its signing keys) are sealed with
// AES-256-GCM under a key derived (HKDF-SHA-256) from WEBHOOK_KEY. The subscription uuid and
// the purpose are the additional data, so a sealed value copied to another row or column does
// not open. Stored as base64url of iv (12 bytes) + ciphertext.
async function aesKey(secret: string | undefined): Promise<CryptoKey> {
	if (!secret || secret.length < MIN_WEBHOOK_KEY_LENGTH) {
		throw new ApiError("webhooks_unconfigured", {
			description: "Webhooks are not configured on this server (WEBHOOK_KEY)",
		});
	}
	const material = await crypto.subtle.importKey("raw", encoder.encode(secret), "HKDF", false, ["deriveKey"]);
	return crypto.subtle.deriveKey(
		{ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(), info: encoder.encode("twin-registry webhook secrets v1") },
		material,
		{ name: "AES-GCM", length: 256 },
		false,
		["encrypt", "decrypt"],
	);
}

export type Purpose = "token" | "key" | "cursor";

export async function seal(env: Env, subscription: string, purpose: Purpose, plain: string): Promise<string> {
	const iv = crypto.getRandomValues(new Uint8Array(12));
	const additionalData = encoder.encode(`${subscription}/${purpose}`);
	const cipher = await crypto.subtle.encrypt(
		{ name: "AES-GCM", iv, additionalData },
		await aesKey(env.WEBHOOK_KEY),
		encoder.encode(plain),
	);
	const out = new Uint8Array(12 + cipher.byteLength);
	out.set(iv);
	out.set(new Uint8Array(cipher), 12);
	return base64Url(out);
}

export async function open(env: Env, subscription: string, purpose: Purpose, sealed: string): Promise<string> {
	const bytes = fromBase64Url(sealed);
	if (!bytes) throw new Error("A sealed value is base64url");
	const additionalData = encoder.encode(`${subscription}/${purpose}`);
	const plain = await crypto.subtle.decrypt(
		{ name: "AES-GCM", iv: bytes.slice(0, 12), additionalData },
		await aesKey(env.WEBHOOK_KEY),
		bytes.slice(12),
	);
	return decoder.decode(plain);
}

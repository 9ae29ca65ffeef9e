import { base64Url, derivedHmacKey, fromBase64Url } from "../base/crypto";
import { MIN_WEBHOOK_KEY_LENGTH } from "../base/seal";

// A job file's URL handler (docs/batches.md): `<job uuid>.<file>.<expiry ms>.<mac>`, the mac an
// HMAC-SHA-256 of `account|job uuid|file|expiry` under a key derived from WEBHOOK_KEY for job
// files alone. Issuing one stores nothing; deleting the job ends it.

const encoder = new TextEncoder();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const FILE = /^[a-z]{1,16}$/;

function linkKey(secret: string | undefined): Promise<CryptoKey> | undefined {
	if (!secret || secret.length < MIN_WEBHOOK_KEY_LENGTH) return undefined;
	return derivedHmacKey(secret, "job-files");
}

const signed = (account: string, job: string, file: string, expiry: number) =>
	encoder.encode(`${account}|${job}|${file}|${expiry}`);

export async function signJobFile(
	secret: string | undefined,
	account: string,
	job: string,
	file: string,
	expiryMs: number,
): Promise<string | undefined> {
	const key = linkKey(secret);
	if (!key) return undefined;
	const mac = await crypto.subtle.sign("HMAC", await key, signed(account, job, file, expiryMs));
	return `${job}.${file}.${expiryMs}.${base64Url(new Uint8Array(mac))}`;
}

// The job and file a handler names, when its mac holds for `account` and it has not expired.
export async function verifyJobFile(
	secret: string | undefined,
	account: string,
	handler: string,
	nowMs: number,
): Promise<{ job: string; file: string } | undefined> {
	const [job, file, expiry, mac, ...rest] = handler.split(".");
	if (rest.length || !job || !UUID.test(job) || !file || !FILE.test(file) || !/^\d{1,15}$/.test(expiry ?? "") || !mac)
		return undefined;
	const bytes = fromBase64Url(mac);
	const key = linkKey(secret);
	if (!bytes || !key) return undefined;
	const valid = await crypto.subtle.verify("HMAC", await key, bytes, signed(account, job, file, Number(expiry)));
	return valid && Number(expiry) > nowMs ? { job, file } : undefined;
}

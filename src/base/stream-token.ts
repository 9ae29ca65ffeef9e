import type { Binding } from "./caller";
import { base64Url, derivedHmacKey, fromBase64Url } from "./crypto";
import { MIN_WEBHOOK_KEY_LENGTH } from "./seal";

// Stream tokens: what a browser's EventSource, which cannot set a header, puts in the
// `access_token` parameter of stream_notifications, and nowhere else. `<account>.<user>.<binding>
// .<validity ms>.<dict>.<mac>`, the mac an HMAC-SHA-256 of those five under a key
// derived from WEBHOOK_KEY. `<dict>` is the dictionary (DICT) of the request that made the
// token, base64url of its JSON, or `-` for none: a stream opened with the token reads it, as
// its rules would have (an EventSource sends no X-TrustedTwin header). Nothing is stored, and the mac is checked before anything is read, so a
// forged token costs no D1 read. `<binding>` is what the credential that made it rests on: for
// a secret or a User Token made from one, when the user's secret was made (the secret as it is
// now must still be that one: deleted or replaced, by a redeemed PIN, the token dies with it);
// for a token issued for the user, `i~<issuer's secret hash>~<issuer>~<target's secret hash or
// ->`; for a token an exchange gave, `f~<provider>~<link>~<provider updated ms>~<end ms>`.

const encoder = new TextEncoder();
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MILLIS = /^\d{1,15}$/;
const MAC = /^[A-Za-z0-9_-]{43}$/;
const INFO = "stream-token";

export type StreamBinding =
	| { kind: "secret"; created_ts: number }
	| { kind: "issued"; sec: string; actor: string; tsec: string | null }
	| { kind: "federated"; provider: string; link: string; pvu: number; end: number };

export type StreamClaim = {
	account: string;
	user: string;
	binding: StreamBinding;
	validityMs: number;
	dict: Record<string, unknown> | null;
};

const UUID_TEXT = "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}";
const HASH_TEXT = "[0-9a-f]{64}";
const BINDING = new RegExp(
	`^(\\d{1,15}|i~${HASH_TEXT}~${UUID_TEXT}~(${HASH_TEXT}|-)|f~${UUID_TEXT}~${UUID_TEXT}~\\d{1,15}~\\d{1,15})$`,
);
const ms = (seconds: number) => Math.round(seconds * 1000);

function bindingPart(binding: StreamBinding): string {
	switch (binding.kind) {
		case "secret":
			return String(ms(binding.created_ts));
		case "issued":
			return `i~${binding.sec}~${binding.actor}~${binding.tsec ?? "-"}`;
		case "federated":
			return `f~${binding.provider}~${binding.link}~${ms(binding.pvu)}~${ms(binding.end)}`;
	}
}

function bindingOf(part: string): StreamBinding {
	const [kind, a, b, c, d] = part.split("~") as [string, string, string, string, string];
	if (kind === "i") return { kind: "issued", sec: a, actor: b, tsec: c === "-" ? null : c };
	if (kind === "f") return { kind: "federated", provider: a, link: b, pvu: Number(c) / 1000, end: Number(d) / 1000 };
	return { kind: "secret", created_ts: Number(kind) / 1000 };
}

const DICT_PART = /^(-|[A-Za-z0-9_-]{1,8192})$/;

function key(secret: string | undefined): Promise<CryptoKey> | undefined {
	return secret && secret.length >= MIN_WEBHOOK_KEY_LENGTH ? derivedHmacKey(secret, INFO) : undefined;
}

const dictPart = (dict: StreamClaim["dict"]) => (dict === null ? "-" : base64Url(encoder.encode(JSON.stringify(dict))));
const text = (claim: StreamClaim) =>
	`${claim.account}.${claim.user}.${bindingPart(claim.binding)}.${claim.validityMs}.${dictPart(claim.dict)}`;

// The dictionary a token's part holds: null for `-`, undefined for anything but an object's JSON.
function dictOf(part: string): StreamClaim["dict"] | undefined {
	if (part === "-") return null;
	const bytes = fromBase64Url(part);
	if (!bytes) return undefined;
	try {
		const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
		return typeof value === "object" && value !== null && !Array.isArray(value)
			? (value as Record<string, unknown>)
			: undefined;
	} catch {
		return undefined;
	}
}

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
	if (parts.length !== 6) return undefined;
	const [account, user, binding, validity, dict, mac] = parts as [string, string, string, string, string, string];
	if (
		!UUID.test(account) ||
		!UUID.test(user) ||
		!BINDING.test(binding) ||
		!MILLIS.test(validity) ||
		!DICT_PART.test(dict) ||
		!MAC.test(mac)
	)
		return undefined;
	const signing = key(secret);
	const bytes = fromBase64Url(mac);
	if (!signing || !bytes) return undefined;
	// The mac is checked over the text as sent, before the dictionary is read.
	const signed = `${account}.${user}.${binding}.${validity}.${dict}`;
	if (!(await crypto.subtle.verify("HMAC", await signing, bytes, encoder.encode(signed)))) return undefined;
	const parsed = dictOf(dict);
	if (parsed === undefined) return undefined;
	return { account, user, binding: bindingOf(binding), validityMs: Number(validity), dict: parsed };
}

// A stream token, or a batch, rests on what the credential that made it rests on: the secret by
// when it was made, never by its hash.
export function streamBinding(binding: Binding): StreamBinding {
	switch (binding.kind) {
		case "secret":
			return { kind: "secret", created_ts: binding.created_ts };
		case "issued":
			return { kind: "issued", sec: binding.sec, actor: binding.actor, tsec: binding.tsec };
		case "federated":
			return { kind: "federated", provider: binding.provider, link: binding.link, pvu: binding.pvu, end: binding.end };
	}
}

import type { ErrorDetail } from "./errors";
import { fromBase64Url } from "./crypto";
import { loadJose } from "./jwt";

// ID tokens of the identity providers an account trusts (docs/sign-in.md): read and verified by
// jose on WebCrypto, never by hand. Before verification only jose's decoders look at a token, to
// find the provider it claims; the keys come from the provider's inline JWK Set or its
// `jwks_uri`, kept per provider in the isolate.

export const FOREIGN_ALGORITHMS = ["RS256", "ES256", "EdDSA"] as const;
export type ForeignAlgorithm = (typeof FOREIGN_ALGORITHMS)[number];
export type JwkSet = { keys: Record<string, unknown>[] };

// What the token alone says, decoded (not verified): its algorithm, key id, issuer, audiences.
export type Peeked = { alg: ForeignAlgorithm; kid: string | undefined; iss: string; aud: string[] };

// Undefined for anything this service does not verify: not a compact JWS with a JSON object as
// header and payload, another algorithm (`none`, HS*, PS*, RS512...), a `crit` header (no
// extension is understood), or no string `iss`.
export async function peek(token: string): Promise<Peeked | undefined> {
	const { decodeJwt, decodeProtectedHeader } = await loadJose();
	if (token.split(".").length !== 3) return undefined;
	try {
		const header = decodeProtectedHeader(token);
		const payload = decodeJwt(token);
		const alg = header.alg as ForeignAlgorithm;
		if (!FOREIGN_ALGORITHMS.includes(alg) || "crit" in header || typeof payload.iss !== "string") return undefined;
		const aud =
			typeof payload.aud === "string"
				? [payload.aud]
				: Array.isArray(payload.aud)
					? payload.aud.filter((a) => typeof a === "string")
					: [];
		return { alg, kid: typeof header.kid === "string" ? header.kid : undefined, iss: payload.iss, aud };
	} catch {
		return undefined;
	}
}

// The provider as verification needs it. `version` changes with every change to the provider
// (its updated_ts): the keys kept for an older version are dropped.
export type ProviderKeys = {
	uuid: string;
	version: number;
	issuer: string;
	audiences: string[];
	algorithms: string[];
	jwks: JwkSet | null;
	jwks_uri: string | null;
};

export type Verified =
	| { ok: true; payload: Record<string, unknown> }
	// `untrusted`: no key of the provider for the token, or a signature that does not hold;
	// `unreachable`: the remote key set could not be fetched; `expired`, `early`: the time claims,
	// judged once the signature held.
	| { ok: false; reason: "untrusted" | "unreachable" | "expired" | "early" };

// The remote key set's bounds: fetched at most every 30 s for an unknown kid, kept 10 min.
const FETCH_TIMEOUT_MS = 5_000;
const COOLDOWN_MS = 30_000;
const CACHE_MS = 600_000;
const MAX_JWKS_BYTES = 65_536;
export const MAX_JWKS_KEYS = 50;
const MAX_PROVIDERS_KEPT = 1_000;

type KeyFunction = Parameters<Awaited<ReturnType<typeof loadJose>>["jwtVerify"]>[1] & ((...args: never[]) => unknown);
const kept = new Map<string, { version: number; keys: KeyFunction }>();

// A remote key set could not be had: told apart from a key set without the token's key.
class Unreachable extends Error {}

async function keysOf(provider: ProviderKeys): Promise<KeyFunction> {
	const found = kept.get(provider.uuid);
	if (found && found.version === provider.version) return found.keys;
	const jose = await loadJose();
	let keys: KeyFunction;
	if (provider.jwks)
		keys = jose.createLocalJWKSet(provider.jwks as Parameters<typeof jose.createLocalJWKSet>[0]) as KeyFunction;
	else {
		const remote = jose.createRemoteJWKSet(new URL(provider.jwks_uri!), {
			timeoutDuration: FETCH_TIMEOUT_MS,
			cooldownDuration: COOLDOWN_MS,
			cacheMaxAge: CACHE_MS,
			[jose.customFetch]: boundedFetch,
		});
		keys = (async (...args: Parameters<typeof remote>) => {
			try {
				return await remote(...args);
			} catch (error) {
				if (
					error instanceof jose.errors.JWKSNoMatchingKey ||
					error instanceof jose.errors.JWKSMultipleMatchingKeys ||
					error instanceof jose.errors.JOSENotSupported
				)
					throw error;
				throw new Unreachable(String(error));
			}
		}) as KeyFunction;
	}
	kept.delete(provider.uuid);
	kept.set(provider.uuid, { version: provider.version, keys });
	if (kept.size > MAX_PROVIDERS_KEPT) kept.delete(kept.keys().next().value as string);
	return keys;
}

// A provider's key set, fetched without following redirects, at most 64 KiB and 50 keys.
async function boundedFetch(url: string, options: RequestInit): Promise<Response> {
	const response = await fetch(url, { ...options, redirect: "manual" });
	if (response.status !== 200) {
		await response.body?.cancel();
		return response;
	}
	const reader = response.body?.getReader();
	const chunks: Uint8Array[] = [];
	let size = 0;
	for (;;) {
		const read = await reader?.read();
		if (!read || read.done) break;
		size += read.value.byteLength;
		if (size > MAX_JWKS_BYTES) {
			await reader!.cancel();
			throw new Error(`The key set is larger than ${MAX_JWKS_BYTES} bytes`);
		}
		chunks.push(read.value);
	}
	const text = new TextDecoder().decode(await new Blob(chunks).arrayBuffer());
	const set = JSON.parse(text) as { keys?: unknown };
	if (!Array.isArray(set.keys) || set.keys.length > MAX_JWKS_KEYS)
		throw new Error(`The key set holds more than ${MAX_JWKS_KEYS} keys, or none`);
	return new Response(text, { status: 200, headers: { "content-type": "application/json" } });
}

// The token verified under the provider's keys: its algorithm among the provider's, its issuer
// and one of its audiences, the signature, then exp and nbf with the clock skew allowed.
export async function verifyForeign(token: string, provider: ProviderKeys, clockSkew: number): Promise<Verified> {
	const jose = await loadJose();
	const keys = await keysOf(provider);
	try {
		const { payload } = await jose.jwtVerify(token, keys, {
			algorithms: provider.algorithms,
			issuer: provider.issuer,
			audience: provider.audiences,
			clockTolerance: clockSkew,
		});
		return { ok: true, payload };
	} catch (error) {
		if (error instanceof Unreachable) return { ok: false, reason: "unreachable" };
		// Raised only once the signature held.
		if (error instanceof jose.errors.JWTExpired) return { ok: false, reason: "expired" };
		if (error instanceof jose.errors.JWTClaimValidationFailed) {
			if (error.claim === "exp") return { ok: false, reason: "expired" };
			if (error.claim === "nbf" || error.claim === "iat") return { ok: false, reason: "early" };
		}
		return { ok: false, reason: "untrusted" };
	}
}

// An inline JWK Set as a provider's write gives it: public RSA (2048 bits or more), P-256 or
// Ed25519 keys, each one WebCrypto imports, no kid twice. One detail per refused key.
const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "oth", "k"];
const ALGORITHM_OF: Record<string, ForeignAlgorithm> = { RSA: "RS256", EC: "ES256", OKP: "EdDSA" };

export async function checkJwkSet(set: JwkSet): Promise<ErrorDetail[]> {
	const jose = await loadJose();
	const details: ErrorDetail[] = [];
	const kids = new Set<string>();
	for (const [i, key] of set.keys.entries()) {
		const path = `jwks.keys.${i}`;
		const refuse = (message: string) => details.push({ path, message });
		const kty = key.kty;
		const alg = typeof kty === "string" ? ALGORITHM_OF[kty] : undefined;
		if (PRIVATE_MEMBERS.some((member) => member in key))
			refuse("A private key member (d, p, q, dp, dq, qi, oth or k): give public keys only");
		else if (kty === "oct") refuse("A symmetric key (kty oct): give public keys only");
		else if (!alg) refuse("kty must be RSA, EC or OKP");
		else if (key.alg !== undefined && key.alg !== alg) refuse(`A ${kty} key's alg must be ${alg}`);
		else if (kty === "EC" && key.crv !== "P-256") refuse("An EC key must be on P-256");
		else if (kty === "OKP" && key.crv !== "Ed25519") refuse("An OKP key must be Ed25519");
		else if (kty === "RSA" && (typeof key.n !== "string" || (fromBase64Url(key.n)?.byteLength ?? 0) * 8 < 2048))
			refuse("An RSA key must have 2048 bits or more");
		else if (typeof key.kid === "string" && kids.has(key.kid)) refuse(`kid ${key.kid} is given twice`);
		else {
			try {
				const imported = await jose.importJWK(key as Parameters<typeof jose.importJWK>[0], alg);
				if (!(imported instanceof CryptoKey) || imported.type !== "public") refuse("Not a public key");
			} catch {
				refuse("WebCrypto does not import this key");
			}
		}
		if (typeof key.kid === "string") kids.add(key.kid);
	}
	return details;
}

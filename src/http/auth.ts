import { sha256Hex, timingSafeEqualText } from "../base/crypto";
import { findCredential, findCredentialOfUser } from "../db/auth";
import type { Caller, Credential } from "../base/caller";
import { now } from "../base/time";
import { ApiError } from "../base/errors";
import { looksLikeJwt, MIN_TOKEN_KEY_LENGTH, verifyJwt } from "../base/jwt";
import { CHALLENGE as challenge, checkCredential, type CredentialFound } from "../policy/credential";
import { claimsOf, type TokenClaims } from "../policy/token";
import { verifyStreamToken } from "../base/stream-token";

const SECRET_SHAPE = /^[A-Za-z0-9_-]{64}$/;

// `Authorization: <credential>` as the original service has it; `Bearer <credential>` too.
function credentialFrom(request: Request): string | null {
	const header = request.headers.get("authorization")?.trim();
	if (!header) return null;
	const match = /^bearer\s+(.+)$/i.exec(header);
	return (match ? match[1] : header).trim();
}

// What the request presents, before any D1 read: a secret (64 characters), or a token (three
// base64url segments) whose signature and expiry hold. Both lead to one stored secret, by its
// hash. The two shapes cannot be taken for each other; anything else is 401.
export type Presented = { type: "secret"; hash: string } | { type: "token"; hash: string; claims: TokenClaims };

export async function presentedCredential(request: Request, env: Env): Promise<Presented> {
	const text = credentialFrom(request);
	if (!text) throw new ApiError("missing_credential", { headers: challenge });
	if (SECRET_SHAPE.test(text)) return { type: "secret", hash: await sha256Hex(text) };
	if (!looksLikeJwt(text) || !env.TOKEN_KEY || env.TOKEN_KEY.length < MIN_TOKEN_KEY_LENGTH) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
	const payload = await verifyJwt(env.TOKEN_KEY, text);
	const claims = payload && claimsOf(payload);
	if (!claims) throw new ApiError("unknown_credential", { headers: challenge });
	if (claims.exp <= now()) throw new ApiError("expired_credential", { headers: challenge });
	return { type: "token", hash: claims.sec, claims };
}

// The caller a credential row stands for, checked as the presented credential requires: alive,
// and for a token the user and account it was made for.
export function callerOf(presented: Presented, found: CredentialFound | undefined, at: number): Caller {
	const principal = checkCredential(found, at);
	if (presented.type === "token" && (presented.claims.sub !== principal.user || presented.claims.acc !== principal.account)) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
	return { ...principal, credential: credentialInfo(presented, found!) };
}

function credentialInfo(presented: Presented, found: CredentialFound): Credential {
	const { fingerprint, validity_ts, created_ts } = found;
	if (presented.type === "secret") return { type: "secret", hash: presented.hash, fingerprint, created_ts, validity_ts };
	const { opt, exp, dict } = presented.claims;
	return { type: "token", hash: presented.hash, fingerprint, created_ts, validity_ts, token: { options: opt, exp, ...(dict ? { dict } : {}) } };
}

// `streamToken`: the operation also takes a stream token in its `access_token` parameter
// (stream_notifications, for browsers), instead of the header, never beside it.
export async function authenticate(request: Request, d1: D1Database, env: Env, accepts: { streamToken?: true } = {}): Promise<Caller> {
	const streamToken = accepts.streamToken ? new URL(request.url).searchParams.get("access_token") : null;
	if (streamToken !== null) return authenticateStream(request, streamToken, d1, env);
	const presented = await presentedCredential(request, env);
	return callerOf(presented, await findCredential(d1, presented.hash), now());
}

// A stream token: its mac first (a forgery reads nothing), then its expiry, then the user's
// secret as it is now, which must be the one the token was made from.
async function authenticateStream(request: Request, token: string, d1: D1Database, env: Env): Promise<Caller> {
	if (request.headers.has("authorization")) {
		const message = "Give the credential in the Authorization header or in access_token, not both";
		throw new ApiError("validation", { description: message, details: [{ path: "access_token", message }] });
	}
	const claim = await verifyStreamToken(env.WEBHOOK_KEY, token);
	if (!claim) throw new ApiError("unknown_credential", { headers: challenge });
	const at = now();
	if (claim.validityMs <= at * 1000) throw new ApiError("expired_credential", { headers: challenge });
	const found = await findCredentialOfUser(d1, claim.user);
	if (!found || found.account !== claim.account || Math.round(found.created_ts * 1000) !== claim.secretCreatedMs) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
	const principal = checkCredential(found, at);
	const { fingerprint, validity_ts, created_ts, hash } = found;
	return { ...principal, credential: { type: "stream", hash, fingerprint, created_ts, validity_ts, stream: { exp: claim.validityMs / 1000, dict: claim.dict } } };
}

// A refusal the account's object sent back as data, answered as authenticate() answers it.
export function refusedCredential(error: ApiError): ApiError {
	return error.status === 401 ? new ApiError(error.code, { headers: challenge }) : error;
}

export const MIN_ADMIN_TOKEN_LENGTH = 32;

// The bootstrap route does not exist unless a strong admin token is configured.
export function authenticateAdmin(request: Request, adminToken: string | undefined): void {
	if (!adminToken || adminToken.length < MIN_ADMIN_TOKEN_LENGTH) throw new ApiError("route_not_found");
	const presented = credentialFrom(request);
	if (!presented) throw new ApiError("missing_credential", { headers: challenge });
	if (!timingSafeEqualText(presented, adminToken)) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
}

import { sha256Hex, timingSafeEqualText } from "../base/crypto";
import { findCredential, findCredentialOfUser } from "../db/auth";
import type { Caller, Credential, Principal } from "../base/caller";
import { now } from "../base/time";
import { ApiError } from "../base/errors";
import { looksLikeJwt, MIN_TOKEN_KEY_LENGTH, verifyJwt } from "../base/jwt";
import { CHALLENGE as challenge, checkCredential, type CredentialFound, type Standing } from "../policy/credential";
import { claimsOf, type TokenClaims } from "../policy/token";
import { type StreamBinding, verifyStreamToken } from "../base/stream-token";
import { bucketOfSecret, FIRST_SHARD } from "../base/shards";
import { bindingOfBucket, type Sessions } from "../db/shards";

const SECRET_SHAPE = /^[A-Za-z0-9_-]{64}$/;

// `Authorization: <credential>` as the original service has it; `Bearer <credential>` too.
function credentialFrom(request: Request): string | null {
	const header = request.headers.get("authorization")?.trim();
	if (!header) return null;
	const match = /^bearer\s+(.+)$/i.exec(header);
	return (match ? match[1] : header).trim();
}

// What the request presents, before any D1 read: a secret (64 characters), or a token (three
// base64url segments) whose signature and expiry hold. A secret, or a token made from one, leads
// to one stored secret by its hash; a token issued for a user or given by an exchange to what
// its claims name (TokenBasis). The two shapes cannot be taken for each other; anything else is 401.
// A secret's first byte names its account's bucket (docs/scaling.md).
export type Presented = { type: "secret"; hash: string; bucket: number } | { type: "token"; claims: TokenClaims };

export async function presentedCredential(request: Request, env: Env): Promise<Presented> {
	const text = credentialFrom(request);
	if (!text) throw new ApiError("missing_credential", { headers: challenge });
	if (SECRET_SHAPE.test(text)) return { type: "secret", hash: await sha256Hex(text), bucket: bucketOfSecret(text)! };
	if (!looksLikeJwt(text) || !env.TOKEN_KEY || env.TOKEN_KEY.length < MIN_TOKEN_KEY_LENGTH) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
	const payload = await verifyJwt(env.TOKEN_KEY, text);
	const claims = payload && claimsOf(payload);
	if (!claims) throw new ApiError("unknown_credential", { headers: challenge });
	if (claims.exp <= now()) throw new ApiError("expired_credential", { headers: challenge });
	return { type: "token", claims };
}

// The hash of the secret a credential is a secret or a plain token of: the isolate's guesses of
// callers are kept by it. Undefined for a token that rests on more (issued, federated).
export function secretHashOf(presented: Presented): string | undefined {
	if (presented.type === "secret") return presented.hash;
	return presented.claims.basis.kind === "secret" ? presented.claims.basis.sec : undefined;
}

// The caller a credential row stands for, checked as the presented credential requires: alive,
// and for a token the user and account it was made for.
export function callerOf(presented: Presented, found: CredentialFound | undefined, at: number): Caller {
	const principal = checkCredential(found, at);
	const { fingerprint, validity_ts, created_ts, hash } = found!;
	return callerFrom(presented, { principal, binding: { kind: "secret", hash, created_ts }, fingerprint, validity_ts });
}

function callerFrom(presented: Presented, standing: Standing): Caller {
	const { principal, binding, fingerprint, validity_ts } = standing;
	if (presented.type === "secret")
		return { ...principal, credential: { type: "secret", binding, fingerprint, validity_ts } };
	const { sub, acc, opt, exp, dict } = presented.claims;
	if (sub !== principal.user || acc !== principal.account)
		throw new ApiError("unknown_credential", { headers: challenge });
	return {
		...principal,
		credential: {
			type: "token",
			binding,
			fingerprint,
			validity_ts,
			token: { options: opt, exp, ...(dict ? { dict } : {}) },
		},
	};
}

// A secret's row: in the database of the bucket its first byte names, else on DB_0, where the
// secrets of accounts from before sharding are (and a wrong one costs that query too).
async function secretRow(shards: Sessions, presented: Presented & { type: "secret" }) {
	const binding = bindingOfBucket(shards.env, presented.bucket);
	const found = await findCredential(shards.of(binding), presented.hash);
	if (found || binding === FIRST_SHARD) return found;
	return findCredential(shards.of(FIRST_SHARD), presented.hash);
}

// The rows a credential rests on, read in one D1 query whatever its kind (in its account's
// database, at its primary), and checked.
async function standingOf(shards: Sessions, presented: Presented, at: number): Promise<Caller> {
	if (presented.type === "secret") return callerOf(presented, await secretRow(shards, presented), at);
	const { basis, sub, acc } = presented.claims;
	const d1 = shards.for(acc);
	if (basis.kind === "secret") return callerOf(presented, await findCredential(d1, basis.sec), at);
	// A token issued for a user or given by an exchange: read as a stream token of one is (the
	// module comes with the first such token an isolate meets).
	const { standingOfBinding } = await import("../operations/standing");
	return callerFrom(presented, await standingOfBinding(d1, basis, { user: sub, account: acc }, at));
}

// `streamToken`: the operation also takes a stream token in its `access_token` parameter
// (stream_notifications, for browsers), instead of the header, never beside it.
export async function authenticate(
	request: Request,
	shards: Sessions,
	accepts: { streamToken?: true } = {},
): Promise<Caller> {
	const streamToken = accepts.streamToken ? new URL(request.url).searchParams.get("access_token") : null;
	if (streamToken !== null) return authenticateStream(request, streamToken, shards);
	return standingOf(shards, await presentedCredential(request, shards.env), now());
}

// A stream token: its mac first (a forgery reads nothing), then its expiry, then what it rests
// on as it is now. One made with a secret or a plain User Token names the user's secret by when
// it was made: the user's one secret must still be that one.
async function authenticateStream(request: Request, token: string, shards: Sessions): Promise<Caller> {
	if (request.headers.has("authorization")) {
		const message = "Give the credential in the Authorization header or in access_token, not both";
		throw new ApiError("validation", { description: message, details: [{ path: "access_token", message }] });
	}
	const claim = await verifyStreamToken(shards.env.WEBHOOK_KEY, token);
	if (!claim) throw new ApiError("unknown_credential", { headers: challenge });
	const at = now();
	if (claim.validityMs <= at * 1000) throw new ApiError("expired_credential", { headers: challenge });
	const stream = { exp: claim.validityMs / 1000, dict: claim.dict };
	const { principal, standing } = await storedStanding(
		shards,
		{ user: claim.user, account: claim.account, binding: claim.binding },
		at,
	);
	return { ...principal, credential: { type: "stream", ...standing, stream } };
}

// What a credential stored by the service rests on (a stream token's, a batch's creator's), as
// it is now, read in one D1 query: one made with a secret or a plain User Token names the user's
// secret by when it was made, and the user's one secret must still be that one; any other by
// its binding (operations/standing.ts).
export async function storedStanding(
	shards: Sessions,
	named: { user: string; account: string; binding: StreamBinding },
	at: number,
): Promise<{ principal: Principal; standing: Pick<Credential, "binding" | "fingerprint" | "validity_ts"> }> {
	const d1 = shards.for(named.account);
	if (named.binding.kind !== "secret") {
		// Loaded with the first such credential: few isolates ever meet one.
		const { standingOfBinding } = await import("../operations/standing");
		const { principal, binding, fingerprint, validity_ts } = await standingOfBinding(
			d1,
			named.binding,
			{ user: named.user, account: named.account },
			at,
		);
		return { principal, standing: { binding, fingerprint, validity_ts } };
	}
	const found = await findCredentialOfUser(d1, named.user);
	if (
		!found ||
		found.account !== named.account ||
		Math.round(found.created_ts * 1000) !== Math.round(named.binding.created_ts * 1000)
	) {
		throw new ApiError("unknown_credential", { headers: challenge });
	}
	const principal = checkCredential(found, at);
	const { fingerprint, validity_ts, created_ts, hash } = found;
	return { principal, standing: { binding: { kind: "secret", hash, created_ts }, fingerprint, validity_ts } };
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

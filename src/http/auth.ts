import { sha256Hex, timingSafeEqualText } from "../base/crypto";
import { findCredential } from "../db/auth";
import type { Caller } from "../base/caller";
import { now } from "../base/time";
import { ApiError } from "../base/errors";
import { CHALLENGE as challenge, checkCredential } from "../policy/credential";
const SECRET_SHAPE = /^[A-Za-z0-9_-]{64}$/;

// `Authorization: <secret>` as the original service has it; `Bearer <secret>` too.
function credentialFrom(request: Request): string | null {
	const header = request.headers.get("authorization")?.trim();
	if (!header) return null;
	const match = /^bearer\s+(.+)$/i.exec(header);
	return (match ? match[1] : header).trim();
}

export async function authenticate(request: Request, d1: D1Database): Promise<Caller> {
	const hash = await credentialHash(request);
	return checkCredential(await findCredential(d1, hash), now());
}

// The SHA-256 of the request's secret; 401 when there is none or it cannot be one.
export async function credentialHash(request: Request): Promise<string> {
	const secret = credentialFrom(request);
	if (!secret) throw new ApiError("missing_credential", { headers: challenge });
	if (!SECRET_SHAPE.test(secret)) throw new ApiError("unknown_credential", { headers: challenge });
	return sha256Hex(secret);
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

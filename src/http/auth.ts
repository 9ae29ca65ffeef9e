import { sha256Hex, timingSafeEqualText } from "../base/crypto";
import type { Database } from "../db/client";
import { findCredential } from "../db/auth";
import type { Caller } from "../base/caller";
import { now } from "../base/time";
import { ApiError } from "../base/errors";

const challenge = { "www-authenticate": 'Bearer realm="twin-registry"' };
const SECRET_SHAPE = /^[A-Za-z0-9_-]{64}$/;

// `Authorization: <secret>` as the original service has it; `Bearer <secret>` too.
function credentialFrom(request: Request): string | null {
	const header = request.headers.get("authorization")?.trim();
	if (!header) return null;
	const match = /^bearer\s+(.+)$/i.exec(header);
	return (match ? match[1] : header).trim();
}

export async function authenticate(request: Request, db: Database): Promise<Caller> {
	const secret = credentialFrom(request);
	if (!secret) throw new ApiError("missing_credential", { headers: challenge });
	if (!SECRET_SHAPE.test(secret)) throw new ApiError("unknown_credential", { headers: challenge });

	const found = await findCredential(db, await sha256Hex(secret));
	if (!found) throw new ApiError("unknown_credential", { headers: challenge });
	if (found.validity_ts !== null && found.validity_ts <= now()) {
		throw new ApiError("expired_credential", { headers: challenge });
	}
	const { validity_ts: _, ...caller } = found;
	return caller;
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

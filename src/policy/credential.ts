import type { Caller, Principal } from "../base/caller";
import { ApiError } from "../base/errors";
import { decide } from "./statement";

// The checks every authenticated request passes, in this order, wherever the credential row
// was read: by the Worker, or by the account's object in the same D1 batch as its own read.

export const CHALLENGE = { "www-authenticate": 'Bearer realm="twin-registry"' };

// The caller of a credential row, if the secret exists and has not expired. `created_ts` and
// `hash` are the secret's.
export type CredentialFound = Principal & { validity_ts: number | null; fingerprint: string; created_ts: number; hash: string };

export function checkCredential(found: CredentialFound | undefined, at: number): Principal {
	if (!found) throw new ApiError("unknown_credential", { headers: CHALLENGE });
	if (found.validity_ts !== null && found.validity_ts <= at) {
		throw new ApiError("expired_credential", { headers: CHALLENGE });
	}
	const { validity_ts: _, fingerprint: __, created_ts: ___, hash: ____, ...principal } = found;
	return principal;
}

// The permission rule by operation name, before anything else the operation does.
export function checkStatement(caller: Caller, operation: string) {
	if (!decide(caller.statement, operation).allowed) {
		throw new ApiError("operation_forbidden", { description: `The caller's role does not allow ${operation}` });
	}
}

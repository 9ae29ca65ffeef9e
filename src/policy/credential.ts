import { type Binding, type Caller, type Principal, principalOf } from "../base/caller";
import { ApiError } from "../base/errors";
import { decide } from "./statement";

// The checks every authenticated request passes, in this order, wherever the credential row
// was read: by the Worker, or by the account's object in the same D1 batch as its own read.

export const CHALLENGE = { "www-authenticate": 'Bearer realm="twin-registry"' };

// The caller of a credential row, if the secret exists and has not expired. `created_ts` and
// `hash` are the secret's.
export type CredentialFound = Principal & {
	validity_ts: number | null;
	fingerprint: string;
	created_ts: number;
	hash: string;
};

export function checkCredential(found: CredentialFound | undefined, at: number): Principal {
	if (!found) throw new ApiError("unknown_credential", { headers: CHALLENGE });
	if (found.validity_ts !== null && found.validity_ts <= at) {
		throw new ApiError("expired_credential", { headers: CHALLENGE });
	}
	const { validity_ts: _, fingerprint: __, created_ts: ___, hash: ____, ...principal } = found;
	return principal;
}

// Whether a credential row, checked, stands for the caller an isolate guessed from an earlier
// row: the same principal. Both are built by checkCredential from a credential row, so their
// keys come in one order.
export const sameCaller = (checked: Principal, claimed: Caller) =>
	JSON.stringify(checked) === JSON.stringify(principalOf(claimed));

// What a token that rests on more than a secret stands for, checked against what it was made on
// (docs/sign-in.md "Revocation"): anything changed since is 401102 on the next request.
export type Standing = {
	principal: Principal;
	binding: Binding;
	fingerprint: string | null;
	validity_ts: number | null;
};

// A token issued for a user: the issuer's secret still the one it was made with (the query
// found it by hash) and unexpired, held by the issuer it names, in the target's account; the
// target's secret the one it had then (or still none).
export type IssuedFound = Principal & {
	validity_ts: number | null;
	fingerprint: string;
	hash: string;
	actor: string;
	actor_account: string;
	target_hash: string | null;
	target_validity_ts: number | null;
};

export function checkIssued(
	found: IssuedFound | undefined,
	basis: { actor: string; tsec: string | null },
	at: number,
): Standing {
	if (
		!found ||
		found.actor !== basis.actor ||
		found.actor_account !== found.account ||
		found.target_hash !== basis.tsec
	) {
		throw new ApiError("unknown_credential", { headers: CHALLENGE });
	}
	const ends = [found.validity_ts, found.target_validity_ts].filter((ts): ts is number => ts !== null);
	const validity_ts = ends.length ? Math.min(...ends) : null;
	if (validity_ts !== null && validity_ts <= at) throw new ApiError("expired_credential", { headers: CHALLENGE });
	const {
		validity_ts: _,
		fingerprint,
		hash,
		actor,
		actor_account: __,
		target_hash: tsec,
		target_validity_ts: ___,
		...principal
	} = found;
	return { principal, binding: { kind: "issued", sec: hash, actor, tsec }, fingerprint, validity_ts };
}

// A token an exchange gave: its link still there, to the user it names, and the provider
// unchanged since (its updated_ts, to the millisecond). It lasts no longer than the sign-in.
export type FederatedFound = Principal & { provider: string; subject: string; provider_updated_ts: number };

export function checkFederated(
	found: FederatedFound | undefined,
	basis: { provider: string; link: string; pvu: number; end: number },
	at: number,
): Standing {
	if (
		!found ||
		found.provider !== basis.provider ||
		Math.round(found.provider_updated_ts * 1000) !== Math.round(basis.pvu * 1000)
	) {
		throw new ApiError("unknown_credential", { headers: CHALLENGE });
	}
	if (basis.end <= at) throw new ApiError("expired_credential", { headers: CHALLENGE });
	const { provider, subject, provider_updated_ts: _, ...principal } = found;
	return {
		principal,
		binding: { kind: "federated", provider, link: basis.link, pvu: basis.pvu, end: basis.end, subject },
		fingerprint: null,
		validity_ts: basis.end,
	};
}

// The permission rule by operation name, before anything else the operation does.
export function checkStatement(caller: Caller, operation: string) {
	if (!decide(caller.statement, operation).allowed) {
		throw new ApiError("operation_forbidden", { description: `The caller's role does not allow ${operation}` });
	}
}

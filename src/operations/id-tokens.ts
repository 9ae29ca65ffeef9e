import { ApiError } from "../base/errors";
import { peek, verifyForeign } from "../base/foreign-jwt";
import { now } from "../base/time";
import type { Database } from "../db/client";
import { findProviderByIssuer, type ProviderRow } from "../db/federation";
import { judgeClaims } from "../policy/federation";

// An ID token from one of an account's identity providers, verified as the exchange's steps 2
// to 4 (docs/sign-in.md): exchange_user_token, and create_user_external_id's proof of a
// subject. Every refusal before the signature held under a key the account trusts is one
// answer (401261), whatever its cause: nobody learns which accounts exist or whom they trust.

export type IdToken = {
	provider: ProviderRow;
	subject: string;
	dict: Record<string, unknown>;
	exp: number;
	payload: Record<string, unknown>;
};

const untrusted = () => new ApiError("untrusted_token");

// `db` reads without the request's meter: what the read costs would tell whether the account
// trusts the issuer. `only`: the provider the token must come from (a link names its provider).
export async function verifyIdToken(db: Database, account: string, token: string, only?: string): Promise<IdToken> {
	const peeked = await peek(token);
	if (!peeked) throw new ApiError("unverifiable_token");
	const provider = await findProviderByIssuer(db, account, peeked.iss);
	if (!provider || (only !== undefined && provider.uuid !== only)) throw untrusted();
	if (
		!peeked.aud.some((audience) => provider.audiences.includes(audience)) ||
		!provider.algorithms.includes(peeked.alg)
	)
		throw untrusted();
	const keys = {
		uuid: provider.uuid,
		version: provider.updated_ts,
		issuer: provider.issuer,
		audiences: provider.audiences,
		algorithms: provider.algorithms,
		jwks: provider.jwks,
		jwks_uri: provider.jwks_uri,
	};
	const verified = await verifyForeign(token, keys, provider.clock_skew);
	if (!verified.ok) {
		if (verified.reason === "unreachable")
			throw new ApiError("provider_keys_unreachable", { headers: { "retry-after": "30" } });
		if (verified.reason === "expired") throw new ApiError("id_token_expired");
		if (verified.reason === "early") throw new ApiError("id_token_early");
		throw untrusted();
	}
	const judged = judgeClaims(verified.payload, provider, now());
	if (!judged.ok) {
		if (judged.refusal === "expired") throw new ApiError("id_token_expired");
		if (judged.refusal === "early") throw new ApiError("id_token_early");
		throw new ApiError("id_token_subject");
	}
	return { provider, subject: judged.subject, dict: judged.dict, exp: judged.exp, payload: verified.payload };
}

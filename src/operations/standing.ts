import type { Binding, Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import type { StreamBinding } from "../base/stream-token";
import { findCredential, findFederatedCredential, findIssuedCredential } from "../db/auth";
import { CHALLENGE, checkCredential, checkFederated, checkIssued, type Standing } from "../policy/credential";

// What a credential rests on (its Binding), read as it is now: one D1 query whatever its kind,
// checked by the policy (src/policy/credential.ts). The Worker authenticates a stream token
// with it, and a stream checks its caller again with it once registered.

export async function standingOfBinding(
	d1: D1Database,
	binding: Binding | Exclude<StreamBinding, { kind: "secret" }>,
	named: { user: string; account: string },
	at: number,
): Promise<Standing> {
	let standing: Standing;
	if (binding.kind === "issued")
		standing = checkIssued(await findIssuedCredential(d1, binding.sec, named.user), binding, at);
	else if (binding.kind === "federated")
		standing = checkFederated(await findFederatedCredential(d1, binding.link), binding, at);
	else {
		const found = await findCredential(d1, binding.hash);
		standing = {
			principal: checkCredential(found, at),
			binding,
			fingerprint: found!.fingerprint,
			validity_ts: found!.validity_ts,
		};
	}
	if (standing.principal.user !== named.user || standing.principal.account !== named.account)
		throw new ApiError("unknown_credential", { headers: CHALLENGE });
	return standing;
}

// The caller's credential read again where `d1` reads: the caller as it now is (its request's
// dictionary and its credential's own claims kept), or the refusal it would now get.
export async function recheck(d1: D1Database, caller: Caller, at: number): Promise<Caller> {
	const credential = caller.credential!;
	const { principal, validity_ts } = await standingOfBinding(d1, credential.binding, caller, at);
	return { ...principal, dict: caller.dict, credential: { ...credential, validity_ts } };
}

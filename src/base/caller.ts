// The authenticated caller: who it is, and the role and description that decide what it may
// do and see. One shape everywhere, from authentication to the account's object. The stored
// shapes of a role live here too, so that the caller needs nothing above the base.
export type Description = Record<string, unknown>;
export type RoleRules = { twin: string | null; entry: string | null; identity: string | null };
export type Statement = { effect: "allow" | "deny"; actions: string[] | null };

// What the credential's row says, as it is now: the same for every request of the credential.
export type Principal = {
	account: string;
	user: string;
	role: string;
	statement: Statement;
	rules: RoleRules;
	description: Description;
	// The account's bucket is moving between databases: its writes answer 503241 until the
	// move ends (docs/scaling.md, "Moving a bucket").
	moving?: true;
};

export type TokenOption = "create" | "refresh";

// What a credential rests on, read again at every request (docs/sign-in.md "Revocation"): a
// User Secret (by its stored SHA-256; a User Token made from it carries that hash), a token
// issued for a user by another (the issuer's secret, and the target's secret as it was then, or
// null for none), or a token given by an exchange (the provider as it was then, the link, and
// the end of the sign-in). A change to any of these ends the credential.
export type Binding =
	| { kind: "secret"; hash: string; created_ts: number }
	| { kind: "issued"; sec: string; actor: string; tsec: string | null }
	| { kind: "federated"; provider: string; link: string; pvu: number; end: number; subject: string };

// How the request proved it: a User Secret, or a User Token or a stream token descending from
// what `binding` names. `fingerprint` is the last four characters of the secret it descends
// from (the issuer's, for an issued token; null for a federated one), `validity_ts` when what
// it rests on stops working (the secrets', the sign-in's end).
export type Credential = {
	type: "secret" | "token" | "stream";
	binding: Binding;
	fingerprint: string | null;
	validity_ts: number | null;
	// A stream token's own expiry, and the dictionary of the request that made it
	// (stream_notifications only).
	stream?: { exp: number; dict: Description | null };
	// A token's own claims.
	token?: { options: TokenOption[]; exp: number; dict?: Description };
};

// `dict` is the request's dictionary (the X-TrustedTwin header, or a token's secret_dict) that
// rules read as DICT; null without one. Both are per request: absent where a caller is built
// from stored rows alone.
export type Caller = Principal & { dict?: Description | null; credential?: Credential };

// Who calls an operation. Without `hash`, `caller` is what the Worker found checking the
// credential. With it, `caller` is only this isolate's guess from an earlier request, still to
// be checked against `hash` (the stored hash of the secret the credential descends from; only
// a credential bound to a secret is guessed) by
// whoever reads on its behalf: the account's object, in the same D1 batch as its read.
export type Claim = { caller: Caller; hash?: string };

export function principalOf(caller: Caller): Principal {
	const { account, user, role, statement, rules, description, moving } = caller;
	return { account, user, role, statement, rules, description, ...(moving ? { moving } : {}) };
}

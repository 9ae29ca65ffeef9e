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
};

export type TokenOption = "create" | "refresh";

// How the request proved it: a User Secret, or a User Token descending from one. `hash` is the
// stored SHA-256 of that secret (what a token's `sec` claim holds), `fingerprint` its last four
// characters, `validity_ts` when the secret stops working.
export type Credential = {
	type: "secret" | "token";
	hash: string;
	fingerprint: string;
	validity_ts: number | null;
	// A token's own claims.
	token?: { options: TokenOption[]; exp: number; dict?: Description };
};

// `dict` is the request's dictionary (the X-TrustedTwin header, or a token's secret_dict) that
// rules read as DICT; null without one. Both are per request: absent where a caller is built
// from stored rows alone.
export type Caller = Principal & { dict?: Description | null; credential?: Credential };

export function principalOf(caller: Caller): Principal {
	const { account, user, role, statement, rules, description } = caller;
	return { account, user, role, statement, rules, description };
}

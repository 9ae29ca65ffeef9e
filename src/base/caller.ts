// The authenticated caller: who it is, and the role and description that decide what it may
// do and see. One shape everywhere, from authentication to the account's object. The stored
// shapes of a role live here too, so that the caller needs nothing above the base.
export type Description = Record<string, unknown>;
export type RoleRules = { twin: string | null; entry: string | null; identity: string | null };
export type Statement = { effect: "allow" | "deny"; actions: string[] | null };

export type Caller = {
	account: string;
	user: string;
	role: string;
	statement: Statement;
	rules: RoleRules;
	description: Description;
};

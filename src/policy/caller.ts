import type { Description, RoleRules, Statement } from "../db/schema";

// The authenticated caller: who it is, and the role and description that decide what it may
// do and see. One shape everywhere, from authentication to the account's object.
export type Caller = {
	account: string;
	user: string;
	role: string;
	statement: Statement;
	rules: RoleRules;
	description: Description;
};

import type { RoleRules, Statement } from "../db/schema";

// `deny` with no listed actions denies nothing: the default allows every operation.
export const DEFAULT_STATEMENT: Statement = { effect: "deny", actions: null };

export const NO_RULES: RoleRules = { twin: null, entry: null, identity: null };

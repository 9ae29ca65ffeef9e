import type { Caller } from "../base/caller";

// The Durable Object of the caller's account.
export function accountObject(env: Env, caller: Caller) {
	return env.ACCOUNTS.getByName(caller.account);
}

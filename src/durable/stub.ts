import type { Caller } from "../http/auth";

// The Durable Object of the caller's account, and who is calling, as the object wants it.
export function accountObject(env: Env, caller: Caller) {
	return { stub: env.ACCOUNTS.getByName(caller.account), principal: { account: caller.account, user: caller.user } };
}

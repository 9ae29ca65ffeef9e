import type { D1Meter } from "../db/meter";
import type { AccountObject } from "./object";
import { type Outcome, unwrap } from "./outcome";

// The account's object as the Worker calls it. Every method answers its value: what the object
// spent in D1 joins the request's meter, and an API error the object answered (as data, see
// outcome.ts) is thrown again here. So an error crosses the boundary one way only, and no
// call site unwraps, counts or casts by hand.
export type AccountClient = {
	[K in keyof AccountObject as AccountObject[K] extends (...args: never[]) => Promise<Outcome<unknown>>
		? K
		: never]: AccountObject[K] extends (...args: infer A) => Promise<Outcome<infer T>>
		? (...args: A) => Promise<T>
		: never;
};

// Typed against the object's own signatures rather than the RPC stub's, whose types recurse
// through JSON values deeper than TypeScript follows.
type Stub = Record<string, (...args: unknown[]) => Promise<Outcome<unknown>>>;

export function accountClient(ctx: { env: Env; meter: D1Meter }, account: string): AccountClient {
	const stub = ctx.env.ACCOUNTS.getByName(account) as unknown as Stub;
	return new Proxy({} as AccountClient, {
		get(_, method) {
			// Not a thenable: awaiting the client itself must not call the object.
			if (typeof method !== "string" || method === "then") return undefined;
			return async (...args: unknown[]) => unwrap(await stub[method]!(...args), ctx.meter);
		},
	});
}

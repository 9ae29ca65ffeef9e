import type { z } from "zod";
import type { Database } from "../db/client";
import type { D1Meter } from "../db/meter";
import type { Caller, Claim } from "../base/caller";
import type { OperationName } from "../policy/names";

// How a route proves who is calling: a User Secret, the bootstrap admin token, or nothing
// (the PIN, webhook token and documentation routes carry their own proof or need none).
export type AuthKind = "secret" | "admin" | "none";

export type Context = {
	env: Env;
	db: Database;
	url: URL;
	meter: D1Meter;
	// The request's id (its trace) and the steps it went through so far.
	request: { id: string; stages: Stage[] };
};

export type Stage = { name: string; at: number };

type Input<P, Q, B> = {
	params: P extends z.ZodType ? z.infer<P> : Record<string, never>;
	query: Q extends z.ZodType ? z.infer<Q> : Record<string, never>;
	body: B extends z.ZodType ? z.infer<B> : undefined;
};

export type Operation<
	A extends AuthKind = AuthKind,
	P extends z.ZodType | undefined = z.ZodType | undefined,
	Q extends z.ZodType | undefined = z.ZodType | undefined,
	B extends z.ZodType | undefined = z.ZodType | undefined,
> = {
	name: OperationName;
	summary: string;
	auth: A;
	params?: P;
	query?: Q;
	body?: B;
	status?: 200 | 201;
	response: z.ZodType;
	run(input: Input<P, Q, B>, ctx: A extends "secret" ? Context & { caller: Caller; claim: Claim } : Context): Promise<unknown>;
	// The operation may run before the Worker checks the credential, for a credential whose
	// caller this isolate has seen: its `claim` then carries the credential's hash, and the
	// operation has the account's object check it in the same D1 batch as its own read. It
	// throws StaleGuess when the object finds the credential no longer stands for that caller;
	// the Worker then checks the credential itself and runs it again.
	checksCredential?: true;
};

// `claim.hash` is set only for an operation that declares `checksCredential`.
export type { Claim };

export class StaleGuess extends Error {}

// An answer already serialized where it was built (a scan page, from the Durable Object):
// sent as it is, without a second parse by the response schema. Its shape is still the
// schema's; the tests check real answers against it.
export class JsonText {
	constructor(readonly text: string) {}
}

// Identity function that lets TypeScript infer the handler's input from the schemas.
export function defineOperation<
	A extends AuthKind,
	P extends z.ZodType | undefined = undefined,
	Q extends z.ZodType | undefined = undefined,
	B extends z.ZodType | undefined = undefined,
>(operation: Operation<A, P, Q, B>): Operation<A, P, Q, B> {
	return operation;
}

import type { z } from "zod/mini";
import type { ErrorCode } from "../base/errors";
import type { D1Meter } from "../db/meter";
import type { Sessions } from "../db/shards";
import type { Caller, Claim } from "../base/caller";
import type { OperationName } from "../policy/names";
import type { LineMark } from "../db/jobs";

// How a route proves who is calling: a User Secret, the bootstrap admin token, or nothing
// (the PIN, webhook token and documentation routes carry their own proof or need none: every
// request to them counts against the address), or a capability URL (an upload or download
// URL: only a lookup that fails, 404, counts, since transfers are traffic), or an identity
// provider's ID token in the body (the exchange: only a refusal, 401, counts, as a failed
// authentication does).
export type AuthKind = "secret" | "admin" | "none" | "capability" | "exchange";

export type Context = {
	env: Env;
	// The request's D1 session of its home database (the caller's account's, or the account its
	// URL names), metered: the database handlers query through (db/client.ts's dbOf gives them
	// its drizzle).
	d1: D1Database;
	// The request's sessions of every database: a row of another account is read where its id
	// says it lives (db/shards.ts).
	shards: Sessions;
	url: URL;
	meter: D1Meter;
	// The request's id (its trace), its method (HEAD on a route that takes it, which answers as
	// GET without the body) and the steps it went through so far.
	request: { id: string; method: string; stages: Stage[] };
	// Set when the call is a line of a batch (docs/batches.md): a write commits the line's mark in
	// the same D1 batch as its own rows, so that the line runs exactly once.
	line?: LineMark;
};

export type Stage = { name: string; at: number };

// A body the operation reads itself, as it streams in (an upload): never buffered, and the
// 64 KiB limit of a JSON body does not apply.
export type Streamed = "stream";

// The body as `body` reads it (replace semantics), or, for an operation that reads merge
// patches and a body sent as one, as `merge.body` reads it, with `merge` saying which.
type Bodies<B, M> =
	| {
			merge: false;
			body: B extends z.ZodMiniType ? z.infer<B> : B extends Streamed ? ReadableStream<Uint8Array> | null : undefined;
	  }
	| (M extends z.ZodMiniType ? { merge: true; body: z.infer<M> } : never);

type Input<P, Q, B, L, M> = {
	params: P extends z.ZodMiniType ? z.infer<P> : Record<string, never>;
	query: Q extends z.ZodMiniType ? z.infer<Q> : Record<string, never>;
	// The request headers the operation declared, by lowercase name.
	headers: Record<string, string | undefined>;
	located: L;
} & Bodies<B, M>;

type RunContext<A extends AuthKind> = A extends "secret" ? Context & { caller: Caller; claim: Claim } : Context;

export type Operation<
	A extends AuthKind = AuthKind,
	P extends z.ZodMiniType | undefined = z.ZodMiniType | undefined,
	Q extends z.ZodMiniType | undefined = z.ZodMiniType | undefined,
	B extends z.ZodMiniType | Streamed | undefined = z.ZodMiniType | Streamed | undefined,
	L = unknown,
	M extends z.ZodMiniType | undefined = z.ZodMiniType | undefined,
	R = unknown,
> = {
	name: OperationName;
	summary: string;
	// For the API document, which adds the statement name, the credential and the refusals
	// every operation of its kind shares: what the operation does beyond its summary and whose
	// rules or ownership limit it. The Worker carries this text, so it stays short.
	description?: string;
	// The refusals particular to this operation, by catalogue name (the document gives their
	// subcodes and statuses).
	refuses?: readonly ErrorCode[];
	// A request body the operation accepts, shown in the API document (a test parses it).
	example?: B extends z.ZodMiniType ? z.input<B> : never;
	auth: A;
	params?: P;
	query?: Q;
	body?: B;
	// A PATCH that also reads its body as a JSON Merge Patch (RFC 7396) when it is sent as
	// application/merge-patch+json: the patch's schema, where a member may mean something else
	// than in a replacement (null removes), and an example for the API document. Any other
	// content type keeps `body`'s replace semantics, but application/json-patch+json, which
	// read as JSON would mean something else, is refused (415251).
	merge?: { body: M; example: M extends z.ZodMiniType ? z.input<M> : never };
	// Request headers the operation reads (documented as header parameters).
	headers?: readonly string[];
	// The resource the path names, found right after the path is validated and before the query
	// and the body are: a route under a twin the caller cannot see answers 404102 whatever else
	// the request holds, exactly as for an absent twin.
	locate?(params: P extends z.ZodMiniType ? z.infer<P> : Record<string, never>, ctx: RunContext<A>): Promise<L>;
	status?: 200 | 201;
	response: z.ZodMiniType;
	// The answer's strong entity tag, quoted, sent as its ETag header.
	etag?(result: R): string;
	// The operation answers with a Response it builds, not JSON: the bytes of a file, or a
	// stream of events (Server-Sent Events, or a WebSocket on an Upgrade request).
	answers?: "bytes" | "events";
	// Whether a POST or PATCH with an Idempotency-Key keeps its answer for replays (the
	// default): false for an operation whose answer carries a credential or a key, which a
	// replay store must never hold; a function when that depends on the body.
	replays?: false | ((body: B extends z.ZodMiniType ? z.infer<B> : unknown) => boolean);
	// The route also takes a stream token in its `access_token` parameter instead of the
	// Authorization header (EventSource cannot set one); on every other route it is unknown.
	streamToken?: true;
	run(input: Input<P, Q, B, L, M>, ctx: RunContext<A>): Promise<R>;
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
	P extends z.ZodMiniType | undefined = undefined,
	Q extends z.ZodMiniType | undefined = undefined,
	B extends z.ZodMiniType | Streamed | undefined = undefined,
	L = undefined,
	M extends z.ZodMiniType | undefined = undefined,
	R = unknown,
>(operation: Operation<A, P, Q, B, L, M, R>): Operation<A, P, Q, B, L, M, R> {
	return operation;
}

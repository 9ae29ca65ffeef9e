import type { IRequest } from "itty-router";
import type { D1Meter } from "../db/meter";
import { type Claim, type Context, JsonText, type Operation, type Stage, StaleGuess } from "../operations/operation";
import type { Caller } from "../base/caller";
import {
	authenticate,
	authenticateAdmin,
	callerOf,
	presentedCredential,
	refusedCredential,
	secretHashOf,
} from "./auth";
import { dictOf } from "./dict";
import { now } from "../base/time";
import { forgetCaller, guessCaller, rememberCaller } from "./hints";
import { checkStatement } from "../policy/credential";
import { isMergePatch, parseJson, readBody } from "./body";
import { ApiError } from "../base/errors";
import { loadOnce } from "../base/load-once";
import { refuseIfLimited, spendAttempt, spendFailedLookup } from "./rate-limit";
import { fingerprintOf, keepsReplay, presentedKey, quotaOf, runOnce } from "./idempotency";
import type { OperationName } from "../policy/names";
import { homeOf, MOVE_RETRY_SECONDS, refuseIfMoving, type Sessions } from "../db/shards";
import { FIRST_SHARD } from "../base/shards";

export type RequestState = {
	requestId: string;
	meter: D1Meter;
	// Its sessions of the databases it touches (db/shards.ts).
	shards: Sessions;
	// The request's steps as the Worker clock saw them (it moves only across I/O), for trace.
	stages: Stage[];
	// Who the request was authenticated as, once it was (a secret, a User Token or a stream
	// token), and its operation: the account's usage counts the request for that user,
	// whatever its answer.
	counted?: { account: string; user: string; operation: OperationName };
	// The administrator's token authenticated the request (create_account).
	admin?: true;
	// The route the request matched (its pattern, never its path) and its operation, for the
	// request's log line.
	route?: { operation: OperationName; path: string };
	// The answer is a replay of one kept for its Idempotency-Key: nothing ran, and the account's
	// usage counts nothing of it (the first request counted what it did).
	replayed?: true;
};

// The order is fixed: read a JSON body (at most 64 KiB), authenticate, check the permission
// rule by operation name, check an Idempotency-Key's form, read the request's dictionary,
// validate the params, find what the path names (a twin the caller may see), tell a merge
// patch from a replacement by the content type (body.ts), validate query, headers and body,
// and only then run the handler (with an Idempotency-Key, once: see idempotency.ts). An
// operation that checks the credential with its own read (`checksCredential`) runs first on
// the isolate's guess of the caller, when it has one; the object keeps that order.
// Whether a credential authenticated the request: a user's (secret, User Token or stream
// token) or the administrator's. A capability URL's token is not one here.
export const authenticated = (state: RequestState | undefined) => state?.counted !== undefined || state?.admin === true;

export function pipeline(load: () => Promise<Operation>, path: string) {
	return async (request: IRequest, env: Env, _exec: ExecutionContext, state: RequestState) => {
		const operation = await load();
		state.route = { operation: operation.name, path };
		const url = new URL(request.url);
		const { shards } = state;
		const body = operation.body === "stream" ? undefined : await readBody(request);
		if (operation.checksCredential) {
			const answer = await runOnGuess(operation, request, env, url, state, body);
			if (answer) return answer;
		}
		let claim: Claim | undefined;
		let key: string | undefined;
		if (operation.auth === "secret") {
			const caller = await countingFailures(env, request, () =>
				authenticate(request, shards, { streamToken: operation.streamToken }),
			);
			shards.home = homeOf(env, caller.account);
			mark(state, "authenticate");
			countAs(state, operation, caller);
			checkStatement(caller, operation.name);
			refuseWritesWhileMoving(caller, request.method);
			mark(state, "statement");
			key = presentedKey(request, operation);
			caller.dict = dictOf(request, caller.credential!);
			if (operation.checksCredential) rememberCaller(caller);
			claim = { caller };
		} else if (operation.auth === "admin") {
			await countingFailures(env, request, async () => authenticateAdmin(request, env.ADMIN_TOKEN));
			state.admin = true;
			mark(state, "authenticate");
		} else if (operation.auth === "capability") {
			await refuseIfLimited(request, "capability");
		} else if (operation.auth === "exchange") {
			await refuseIfLimited(request, "exchange");
		} else {
			// Every route without a credential takes a secret value in its URL (a PIN, a token).
			await spendAttempt(env.SECRET_ATTEMPTS, request);
		}
		// A route without a credential names its account in the path: its home is that account's.
		const named = request.params?.account;
		if (shards.home === undefined && typeof named === "string") shards.home = homeOf(env, named);
		const d1 = shards.of(shards.home ?? FIRST_SHARD);
		// No credential query read the move's row for such a route: it is read on its own, before
		// anything is written.
		if (typeof named === "string" && writesWithoutCredential(operation, request.method))
			await refuseIfMoving(d1, named);
		const ctx = contextOf({ env, url, method: request.method, meter: state.meter, d1, state }, claim);
		try {
			const input = await readInput(await loadValidation(), operation, callOf(request, url, body), ctx);
			mark(state, "validate");
			if (key !== undefined && keepsReplay(operation, input.body)) {
				const caller = claim!.caller;
				const once = {
					d1: ctx.d1,
					account: caller.account,
					key,
					fingerprint: await fingerprintOf(request, body, caller),
					trace: state.requestId,
					quota: quotaOf(env),
				};
				const answered = await runOnce(once, () => run(operation, input, ctx));
				if (answered.headers.get("idempotent-replayed") === "true") state.replayed = true;
				return answered;
			}
			return await run(operation, input, ctx);
		} catch (error) {
			if (operation.auth === "capability" && error instanceof ApiError && error.status === 404)
				await spendFailedLookup(env.SECRET_ATTEMPTS, request, "capability");
			if (operation.auth === "exchange" && error instanceof ApiError && error.status === 401)
				await spendFailedLookup(env.AUTH_FAILURES, request, "exchange");
			throw error;
		}
	};
}

// While the account's bucket moves between databases, its reads are served from where its rows
// are and its writes wait (docs/scaling.md, "Moving a bucket").
export function refuseWritesWhileMoving(caller: Caller, method: string) {
	if (caller.moving && method !== "GET" && method !== "HEAD")
		throw new ApiError("bucket_moving", { headers: { "retry-after": String(MOVE_RETRY_SECONDS) } });
}

// The routes whose proof is in the URL and that write: a PIN's redemption, a webhook token's
// confirm, refresh and unsubscribe (the confirm a GET), an upload's PUT. A download only reads.
const writesWithoutCredential = (operation: Operation, method: string) =>
	operation.auth === "none" || (operation.auth === "capability" && method !== "GET" && method !== "HEAD");

function countAs(state: RequestState, operation: Operation, caller: Caller) {
	state.counted = { account: caller.account, user: caller.user, operation: operation.name };
}

function mark(state: RequestState, name: string) {
	state.stages.push({ name, at: Date.now() });
}

type Runtime = { env: Env; url: URL; method: string; meter: D1Meter; d1: D1Database; state: RequestState };
export type RunContext = Context & { caller?: Caller; claim?: Claim };

export function contextOf({ env, url, method, meter, d1, state }: Runtime, claim: Claim | undefined): RunContext {
	return {
		env,
		d1,
		shards: state.shards,
		url,
		meter,
		caller: claim?.caller,
		claim,
		request: { id: state.requestId, method, stages: state.stages },
	};
}

// The Operation type guarantees `caller` and `claim` are present for "secret" routes.
export function run(operation: Operation, input: unknown, ctx: RunContext) {
	return operation.run(input as never, ctx as never).then((result) => answer(operation, result));
}

// zod comes with the first request that validates, not with every isolate: the isolates that
// run only the Durable Objects or the queue consumer never load it.
export const loadValidation = loadOnce(() => import("../base/validation"));

// What an operation reads of a call: its path's parameters as the path carries them
// (percent-encoded), its URL (whose query it reads), its headers, whether its body is a merge
// patch and the body's JSON (each asked only where the operation reads it, so that its refusal,
// an unreadable type or malformed JSON, comes in that order), and the body's stream. A request
// is one (callOf); a batch's line is another (jobs/line.ts).
export type Call = {
	params: Record<string, string> | undefined;
	url: URL;
	headers: Headers;
	mergePatch(): boolean;
	json(): unknown;
	stream: ReadableStream<Uint8Array> | null;
};

function callOf(request: IRequest, url: URL, body: Uint8Array | undefined): Call {
	return {
		params: request.params,
		url,
		headers: request.headers,
		mergePatch: () => isMergePatch(request),
		json: () => bodyOf(body),
		stream: request.body,
	};
}

// The validation module (base/validation.ts): loaded with the first request that validates, or
// imported where it cannot be loaded so (a Durable Object's call, under the test pool).
export type Validation = Pick<typeof import("../base/validation"), "validate" | "queryOf">;

export async function readInput({ validate, queryOf }: Validation, operation: Operation, call: Call, ctx: RunContext) {
	const params = operation.params ? validate(operation.params, call.params) : {};
	const located = operation.locate ? await operation.locate(params as never, ctx as never) : undefined;
	// Every route refuses a parameter given twice, also one whose query it otherwise ignores.
	const query = queryOf(call.url.searchParams);
	// A body sent as a merge patch, to a route that reads one, is validated as a patch.
	const patch = operation.merge && call.mergePatch() ? operation.merge.body : undefined;
	const schema = patch ?? operation.body;
	return {
		params,
		located,
		query: operation.query ? validate(operation.query, query) : {},
		headers: Object.fromEntries((operation.headers ?? []).map((name) => [name, call.headers.get(name) ?? undefined])),
		merge: patch !== undefined,
		body: schema === "stream" ? call.stream : schema ? validate(schema, call.json()) : undefined,
	};
}

// No body is an empty object (every field optional is then fine); a body of JSON `null`, a
// number or a list is validated as it is, and refused.
function bodyOf(bytes: Uint8Array | undefined): unknown {
	const parsed = parseJson(bytes);
	return parsed === undefined ? {} : parsed;
}

function answer(operation: Operation, result: unknown) {
	if (operation.answers) return result as Response;
	if (result instanceof JsonText) {
		return new Response(result.text, {
			status: operation.status ?? 200,
			headers: { "content-type": "application/json" },
		});
	}
	const headers = operation.etag ? { etag: operation.etag(result) } : undefined;
	return Response.json(operation.response.parse(result), { status: operation.status ?? 200, headers });
}

// The operation on the isolate's guess of the caller, for a credential seen before. Undefined
// sends the request down the usual path: no guess, input the usual path must refuse in its own
// order (after the credential and the statement), or a guess the object found outdated.
async function runOnGuess(
	operation: Operation,
	request: IRequest,
	env: Env,
	url: URL,
	state: RequestState,
	body: Uint8Array | undefined,
) {
	// A write with an Idempotency-Key runs once, which the usual path sees to.
	if (request.headers.has("idempotency-key")) return undefined;
	const presented = await presentedCredential(request, env).catch(() => undefined);
	const hash = presented && secretHashOf(presented);
	const found = hash === undefined ? undefined : guessCaller(hash);
	if (presented === undefined || hash === undefined || found === undefined) return undefined;
	let caller: Caller;
	let input: Awaited<ReturnType<typeof readInput>>;
	let ctx: RunContext;
	try {
		// The same checks as on the usual path, on the row as last seen; the object reads it again.
		caller = callerOf(presented, found, now());
		caller.dict = dictOf(request, caller.credential!);
		state.shards.home = homeOf(env, caller.account);
		const d1 = state.shards.of(state.shards.home);
		ctx = contextOf({ env, url, method: request.method, meter: state.meter, d1, state }, { caller, hash });
		input = await readInput(await loadValidation(), operation, callOf(request, url, body), ctx);
	} catch {
		return undefined;
	}
	try {
		const answered = await run(operation, input, ctx);
		countAs(state, operation, caller);
		return answered;
	} catch (error) {
		if (error instanceof StaleGuess) return undefined;
		// Another refusal comes after the object found the credential standing for the guess.
		if (error instanceof ApiError && error.status !== 401) countAs(state, operation, caller);
		if (!(error instanceof ApiError) || error.status !== 401) throw error;
		forgetCaller(hash);
		await spendAttempt(env.AUTH_FAILURES, request);
		throw refusedCredential(error);
	}
}

// A failed authentication counts against the client's address; past the limit it is a 429.
async function countingFailures<T>(env: Env, request: Request, check: () => Promise<T>): Promise<T> {
	try {
		return await check();
	} catch (error) {
		if (error instanceof ApiError && error.status === 401) await spendAttempt(env.AUTH_FAILURES, request);
		throw error;
	}
}

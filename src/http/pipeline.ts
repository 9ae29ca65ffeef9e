import type { IRequest } from "itty-router";
import { type Database, database } from "../db/client";
import type { D1Meter } from "../db/meter";
import { type Claim, JsonText, type Operation, type Stage, StaleGuess } from "../operations/operation";
import { authenticate, authenticateAdmin, callerOf, presentedCredential, refusedCredential } from "./auth";
import { dictOf } from "./dict";
import { now } from "../base/time";
import { forgetCaller, guessCaller, rememberCaller } from "./hints";
import { checkStatement } from "../policy/credential";
import { parseJson } from "./body";
import { ApiError } from "../base/errors";
import { spendAttempt } from "./rate-limit";
import { validate } from "./validation";

export type RequestState = {
	requestId: string;
	body: Uint8Array | undefined;
	meter: D1Meter;
	d1: D1DatabaseSession;
	// The request's steps as the Worker clock saw them (it moves only across I/O), for trace.
	stages: Stage[];
};

// The order is fixed: authenticate, check the permission rule by operation name, read the
// request's dictionary, validate params, query and body, and only then run the handler. An
// operation that checks the credential with its own read (`checksCredential`) runs first on
// the isolate's guess of the caller, when it has one; the object keeps that order.
export function pipeline(operation: Operation) {
	return async (request: IRequest, env: Env, _exec: ExecutionContext, state: RequestState) => {
		const url = new URL(request.url);
		const d1 = state.meter.wrap(state.d1);
		if (operation.checksCredential) {
			const answer = await runOnGuess(operation, request, env, url, state, d1);
			if (answer) return answer;
		}
		let claim: Claim | undefined;
		if (operation.auth === "secret") {
			const caller = await countingFailures(env, request, () => authenticate(request, d1, env));
			mark(state, "authenticate");
			checkStatement(caller, operation.name);
			mark(state, "statement");
			caller.dict = dictOf(request, caller.credential!);
			if (operation.checksCredential) rememberCaller(caller.credential!.hash, caller);
			claim = { caller };
		} else if (operation.auth === "admin") {
			await countingFailures(env, request, async () => authenticateAdmin(request, env.ADMIN_TOKEN));
			mark(state, "authenticate");
		} else {
			// Every route without a credential takes a secret value in its URL (a PIN, a token).
			await spendAttempt(env.SECRET_ATTEMPTS, request);
		}
		const input = readInput(operation, request, url, state);
		mark(state, "validate");
		return run(operation, input, { env, url, meter: state.meter, d1, state }, claim);
	};
}

function mark(state: RequestState, name: string) {
	state.stages.push({ name, at: Date.now() });
}

type Runtime = { env: Env; url: URL; meter: D1Meter; d1: D1Database; state: RequestState };

function run(operation: Operation, input: unknown, { env, url, meter, d1, state }: Runtime, claim: Claim | undefined) {
	// drizzle is built only for an operation that queries through it (not /whoami).
	let db: Database | undefined;
	const ctx = {
		env,
		get db() {
			return (db ??= database(d1));
		},
		url,
		meter,
		caller: claim?.caller,
		claim,
		request: { id: state.requestId, stages: state.stages },
	};
	// The Operation type guarantees `caller` and `claim` are present for "secret" routes.
	return operation.run(input as never, ctx as never).then((result) => answer(operation, result));
}

function readInput(operation: Operation, request: IRequest, url: URL, state: RequestState) {
	return {
		params: operation.params ? validate(operation.params, request.params) : {},
		query: operation.query ? validate(operation.query, Object.fromEntries(url.searchParams)) : {},
		body: operation.body ? validate(operation.body, bodyOf(state.body)) : undefined,
	};
}

// No body is an empty object (every field optional is then fine); a body of JSON `null`, a
// number or a list is validated as it is, and refused.
function bodyOf(bytes: Uint8Array | undefined): unknown {
	const parsed = parseJson(bytes);
	return parsed === undefined ? {} : parsed;
}

function answer(operation: Operation, result: unknown) {
	if (result instanceof JsonText) {
		return new Response(result.text, { status: operation.status ?? 200, headers: { "content-type": "application/json" } });
	}
	return Response.json(operation.response.parse(result), { status: operation.status ?? 200 });
}

// The operation on the isolate's guess of the caller, for a credential seen before. Undefined
// sends the request down the usual path: no guess, input the usual path must refuse in its own
// order (after the credential and the statement), or a guess the object found outdated.
async function runOnGuess(operation: Operation, request: IRequest, env: Env, url: URL, state: RequestState, d1: D1Database) {
	const presented = await presentedCredential(request, env).catch(() => undefined);
	const found = presented && guessCaller(presented.hash);
	if (presented === undefined || found === undefined) return undefined;
	let caller, input;
	try {
		// The same checks as on the usual path, on the row as last seen; the object reads it again.
		caller = callerOf(presented, found, now());
		caller.dict = dictOf(request, caller.credential!);
		input = readInput(operation, request, url, state);
	} catch {
		return undefined;
	}
	try {
		return await run(operation, input, { env, url, meter: state.meter, d1, state }, { caller, hash: presented.hash });
	} catch (error) {
		if (error instanceof StaleGuess) return undefined;
		if (!(error instanceof ApiError) || error.status !== 401) throw error;
		forgetCaller(presented.hash);
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

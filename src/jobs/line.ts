import { countRequest } from "../account/usage-client";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { publicOrigin } from "../base/origin";
import { database } from "../db/client";
import { findLineMark, type LineMark } from "../db/jobs";
import { D1Meter } from "../db/meter";
import { homeDatabase, homeOf, Sessions } from "../db/shards";
import { errorResponse } from "../http/errors";
import {
	type Call,
	contextOf,
	type RequestState,
	readInput,
	refuseWritesWhileMoving,
	type RunContext,
	run,
} from "../http/pipeline";
import { requestLine, writeRequestLine } from "../http/request-log";
// Imported, not loaded (pipeline.ts loadValidation): a job's object runs lines, and the Workers
// test pool cannot run a dynamic import() inside an object's call (test/load-operations.ts).
import * as validation from "../base/validation";
import { checkStatement } from "../policy/credential";
import { BATCHABLE, type Batchable, type BatchableName } from "../operations/batchable";

// One line of a batch (docs/batches.md): the operation, its path parameters by the names a line
// gives them, its query and its body (absent: none).
export type LineCall = {
	name: BatchableName;
	params: Record<string, string>;
	query: Record<string, string | number | boolean>;
	body?: unknown;
};

// What the line answered, as a request would have been answered (the body is the operation's
// answer or the error envelope), with the trace of its run, which its log line carries; or
// `already`: an earlier run committed the line (its trace), and this one wrote nothing.
export type LineAnswer =
	| { status: number; subcode?: number; body: unknown; trace: string }
	| { already: true; trace: string };

type Runtime = { env: Env; waitUntil(promise: Promise<unknown>): void };

// The origin of a line's URL (ctx.url, its log line's request): the service's own, or when the
// server has none (PUBLIC_URL), one that points nowhere.
function originOf(env: Env): string {
	try {
		return publicOrigin(env);
	} catch {
		return "https://batch.invalid";
	}
}

// Runs one line as its creator's call of the operation, the way the pipeline runs a request
// (http/pipeline.ts), without one: the caller is given, checked already (its dictionary set by
// whoever asks), and the line has no headers (its body replaces, as a JSON body does, never
// merges). The operation's write commits the line's mark (`mark`, with this run's trace) in its
// own D1 batch, so a line runs exactly once: a run that fails after an earlier one committed the
// line (its write then meets the mark, or finds its work done and refuses it) answers
// `already`. Each run writes its request log line and counts in the account's usage as a
// request does.
export async function runLine(
	runtime: Runtime,
	caller: Caller,
	call: LineCall,
	mark: Pick<LineMark, "job" | "line">,
): Promise<LineAnswer> {
	const { env } = runtime;
	const startedAt = Date.now();
	const trace = crypto.randomUUID();
	const { operation, method, path, params }: Batchable = BATCHABLE[call.name];
	const meter = new D1Meter();
	const counted = { account: caller.account, user: caller.user, operation: call.name };
	const state: RequestState = {
		requestId: trace,
		meter,
		shards: new Sessions(env, meter),
		stages: [],
		route: { operation: call.name, path },
		counted,
	};
	// The path's parameters as a request's path carries them: percent-encoded, by the operation's
	// names (the schemas decode them once).
	const encoded = Object.fromEntries(
		Object.entries(params).map(([line, own]) => [own, encodeURIComponent(call.params[line] ?? "")]),
	);
	const url = new URL(
		path.replace(/:(\w+)\+?/g, (_: string, name: string) => encoded[name] ?? ""),
		originOf(env),
	);
	for (const [name, value] of Object.entries(call.query)) url.searchParams.set(name, String(value));

	let ended: { status: number; subcode?: number; body: unknown; failure?: unknown };
	try {
		const { shards } = state;
		shards.home = homeOf(env, caller.account);
		checkStatement(caller, call.name);
		refuseWritesWhileMoving(caller, method);
		const ctx: RunContext = {
			...contextOf({ env, url, method, meter, d1: shards.of(shards.home), state }, { caller }),
			line: { ...mark, trace },
		};
		const line: Call = {
			params: encoded,
			url,
			headers: new Headers(),
			mergePatch: () => false,
			json: () => (call.body === undefined ? {} : call.body),
			stream: null,
		};
		const input = await readInput(validation, operation, line, ctx);
		const response = await run(operation, input, ctx);
		ended = { status: response.status, body: await response.json() };
	} catch (error) {
		const refusal = error instanceof ApiError ? error : new ApiError("internal");
		const response = errorResponse(refusal, trace);
		ended = {
			status: response.status,
			subcode: refusal.subcode,
			body: await response.json(),
			...(error instanceof ApiError ? {} : { failure: error }),
		};
	}

	countRequest(runtime, counted, ended.status, meter);
	const request = new Request(url, { method });
	writeRequestLine(requestLine(request, trace, state, meter, startedAt, ended));
	const { failure: _, ...answered } = ended;
	if (ended.status < 400) return { ...answered, trace };
	// A refusal is the line's answer unless an earlier run committed the line: a write that met
	// its mark fails (500), and one that found its work done refuses it (the identity it would
	// delete is gone). A refusal this run committed with its own mark (a conditional write that
	// matched nothing) stands.
	const committed = await committedBy(env, mark.job, mark.line);
	if (committed !== undefined && committed !== trace) return { already: true, trace: committed };
	return { ...answered, trace };
}

// Whether a run of the line committed it: for a job's object, before it runs again a line it
// had started (it may have stopped before the answer came back).
export async function lineCommitted(env: Env, job: string, line: number): Promise<boolean> {
	return (await committedBy(env, job, line)) !== undefined;
}

// The trace of the run that committed the line, read outside any session, so at its job's
// database's primary: a run that just failed on the mark must find it.
async function committedBy(env: Env, job: string, line: number): Promise<string | undefined> {
	return (await findLineMark(database(homeDatabase(env, job)), job, line))?.trace;
}

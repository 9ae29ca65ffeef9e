import type { IRequest } from "itty-router";
import { database } from "../db/client";
import type { D1Meter } from "../db/meter";
import type { Operation } from "../operations/operation";
import { decide } from "../policy/statement";
import type { Caller } from "../base/caller";
import { authenticate, authenticateAdmin } from "./auth";
import { parseJson } from "./body";
import { ApiError } from "../base/errors";
import { spendAttempt } from "./rate-limit";
import { validate } from "./validation";

export type RequestState = { requestId: string; body: Uint8Array | undefined; meter: D1Meter };

// The order is the contract: authenticate, check the permission rule by operation name,
// validate params, query and body, and only then run the handler.
export function pipeline(operation: Operation) {
	return async (request: IRequest, env: Env, _exec: ExecutionContext, state: RequestState) => {
		const db = database(state.meter.wrap(env.DB));
		let caller: Caller | undefined;
		if (operation.auth === "secret") {
			caller = await countingFailures(env, request, () => authenticate(request, db));
			const decision = decide(caller.statement, operation.name);
			if (!decision.allowed) {
				throw new ApiError("operation_forbidden", { description: `The caller's role does not allow ${operation.name}` });
			}
		} else if (operation.auth === "admin") {
			await countingFailures(env, request, async () => authenticateAdmin(request, env.ADMIN_TOKEN));
		} else {
			// Every route without a credential takes a secret value in its URL (a PIN, a token).
			await spendAttempt(env.SECRET_ATTEMPTS, request);
		}

		const url = new URL(request.url);
		const input = {
			params: operation.params ? validate(operation.params, request.params) : {},
			query: operation.query ? validate(operation.query, Object.fromEntries(url.searchParams)) : {},
			body: operation.body ? validate(operation.body, parseJson(state.body) ?? {}) : undefined,
		};
		const ctx = {
			env,
			db,
			url,
			meter: state.meter,
			caller,
		};
		// The Operation type guarantees `caller` is present for "secret" routes.
		const result = await operation.run(input as never, ctx as never);
		return Response.json(operation.response.parse(result), { status: operation.status ?? 200 });
	};
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

import type { D1Cost, D1Meter } from "../db/meter";
import { ApiError, type ErrorCode, type ErrorDetail } from "../base/errors";

// What crosses the RPC boundary: a value, an API error as plain data (class instances and
// their fields do not survive the trip), or a failure of ours as its text: the object never
// rejects a call, so a failure (D1 down) reaches the caller as its 500 and nothing else.
// What the object spent in D1 comes back too, to be counted in the request's Server-Timing.
export type Outcome<T> = { cost: D1Cost } & (
	| { ok: true; value: T }
	| { ok: false; code: ErrorCode; description: string; details?: ErrorDetail[]; headers?: Record<string, string> }
	| { ok: false; failure: string }
);

// Kept apart from AccountDO so that the operations, and the API document built from them,
// load without the Workers runtime.
export function unwrap<T>(outcome: Outcome<T>, meter: D1Meter): T {
	meter.add(outcome.cost);
	if (outcome.ok) return outcome.value;
	if ("failure" in outcome) throw new Error(`The account's object failed: ${outcome.failure}`);
	const { description, details, headers } = outcome;
	throw new ApiError(outcome.code, { description, details, headers });
}

// An object's call as an Outcome: its value, or its API error as data, with what it cost in D1.
// Any other failure is logged here, with the object's stack, and answered as its text.
export async function settled<T>(meter: D1Meter, object: string, work: () => Promise<T>): Promise<Outcome<T>> {
	try {
		return { ok: true, value: await work(), cost: meter.snapshot() };
	} catch (error) {
		if (error instanceof ApiError)
			return {
				ok: false,
				code: error.code,
				description: error.message,
				details: error.details,
				// A retry delay (503241) reaches the answer.
				...(error.headers ? { headers: error.headers } : {}),
				cost: meter.snapshot(),
			};
		console.error(JSON.stringify({ object, error: String(error), stack: (error as Error)?.stack }));
		return { ok: false, failure: String(error), cost: meter.snapshot() };
	}
}

import type { D1Meter } from "../db/meter";
import type { RequestState } from "./pipeline";

// The one log line of a request (docs/operations.md "Request logs"), written when it ends: what ran, for whom,
// how it ended and what it cost. It holds the route's pattern, never the path, and no
// header, body or query value, so no secret, token or PIN reaches the logs. A 5xx line adds
// the error and its stack.

export type RequestLine = {
	trace: string;
	traceparent?: string;
	operation: string | null;
	method: string;
	route: string | null;
	status: number;
	subcode?: number;
	// A replay of the answer kept for the request's Idempotency-Key: nothing ran.
	replayed?: true;
	account?: string;
	user?: string;
	ms: number;
	d1_rows_read: number;
	d1_rows_written: number;
	error?: string;
	stack?: string;
};

// W3C Trace Context: version, a trace-id of 32 hex digits (not all zero), a parent id, flags.
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

// The trace-id of a valid `traceparent` header, so that the line can be found by the caller's
// own trace; anything else is ignored.
export function traceIdOf(header: string | null): string | undefined {
	const match = header === null ? null : TRACEPARENT.exec(header.trim());
	if (!match || match[1] === "ff" || /^0+$/.test(match[2]) || /^0+$/.test(match[3])) return undefined;
	return match[2];
}

export type Ending = { status: number; subcode?: number; failure?: unknown };

export function requestLine(
	request: Request,
	trace: string,
	state: RequestState | undefined,
	meter: D1Meter,
	startedAt: number,
	end: Ending,
): RequestLine {
	const traceparent = traceIdOf(request.headers.get("traceparent"));
	const counted = state?.counted;
	const failure = end.failure as Error | undefined;
	return {
		trace,
		...(traceparent && { traceparent }),
		operation: state?.route?.operation ?? null,
		method: request.method,
		route: state?.route?.path ?? null,
		status: end.status,
		...(end.subcode !== undefined && { subcode: end.subcode }),
		...(state?.replayed && { replayed: true as const }),
		...(counted && { account: counted.account, user: counted.user }),
		ms: Date.now() - startedAt,
		d1_rows_read: meter.rowsRead,
		d1_rows_written: meter.rowsWritten,
		...(end.failure !== undefined && { error: String(failure), stack: failure?.stack }),
	};
}

// The line to the log: a 5xx's as an error.
export function writeRequestLine(line: RequestLine) {
	(line.status >= 500 ? console.error : console.log)(JSON.stringify(line));
}

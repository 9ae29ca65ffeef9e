// Requests through the Worker's own fetch handler, as a client sends them, and what the tests
// read off the answers: the error envelope, a fingerprint to compare two answers, the D1 cost in
// Server-Timing. The other helpers reach the Worker through `call` too.
import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";
import worker from "../../src/index";
import { ERRORS } from "../../src/base/errors";

export const BASE = "https://registry.test";

type CallOptions = {
	secret?: string;
	body?: unknown;
	headers?: Record<string, string>;
	// Bindings to replace for this request (another CALLBACK_POLICY, a recording producer).
	env?: Partial<Record<keyof Env, unknown>>;
};

// Every call goes through the Worker's own fetch handler, as a client's request would.
export async function call(method: string, path: string, options: CallOptions = {}) {
	const headers = new Headers(options.headers);
	// Each call comes from its own client address unless the test names one, so that the
	// per-address rate limits (src/http/rate-limit.ts) only meet the tests that aim at them.
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	if (options.secret) headers.set("authorization", options.secret);
	let body: string | undefined;
	if (options.body !== undefined) {
		body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
		// JSON unless the test sends another type (a merge patch, say).
		if (!headers.has("content-type")) headers.set("content-type", "application/json");
	}
	const request = new Request(BASE + path, { method, headers, body });
	const response = await (options.env ? fetchWithEnv(request, options.env) : exports.default.fetch(request));
	const text = await response.text();
	return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

export function randomAddress() {
	const bytes = crypto.getRandomValues(new Uint8Array(3));
	return `10.${bytes.join(".")}`;
}

// Calls the Worker's fetch handler with a modified environment (a missing binding, another
// ADMIN_TOKEN), which the `exports` entry point cannot take.
export function fetchWithEnv(request: Request, changes: Partial<Record<keyof Env, unknown>>) {
	type Incoming = Parameters<typeof worker.fetch>[0];
	return worker.fetch(request as Incoming, { ...env, ...changes } as Env, createExecutionContext());
}

// The error envelope, with the trace equal to the response's request id and the catalogue's
// string code of the subcode (src/base/errors.ts).
const CODE_OF = new Map(Object.entries(ERRORS).map(([code, error]) => [error.subcode as number, code]));

export function expectError(res: Awaited<ReturnType<typeof call>>, status: number, subcode: number) {
	expect(res.status).toBe(status);
	expect(res.body).toMatchObject({ subcode, code: CODE_OF.get(subcode), trace: res.headers.get("x-request-id") });
	expect(typeof res.body.description).toBe("string");
	expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
}

// Everything a client could compare between two answers, except the request's own id, the time
// in Server-Timing, and the D1 bookmarks' values (each database's state when the request ran,
// not the resource): which databases the bookmark header names is compared, the caller's own
// (always first) as `home`, so that two accounts' answers compare whichever database each is
// on. `swap` replaces names that differ between the two requests by design.
export function fingerprint(res: Awaited<ReturnType<typeof call>>, swap: (text: string) => string = (text) => text) {
	const { trace: _, ...body } = res.body ?? {};
	const headers = [...res.headers.entries()]
		.filter(([name]) => name !== "x-request-id")
		.map(([name, value]) => [
			name,
			name === "server-timing"
				? value.replace(/dur=[\d.]+/g, "dur=")
				: name === "x-d1-bookmark"
					? bookmarkNames(value)
					: value,
		]);
	return JSON.parse(swap(JSON.stringify({ status: res.status, body, headers })));
}

function bookmarkNames(header: string) {
	const [home, ...others] = header.split(", ").map((entry) => entry.split("=")[0]);
	return ["home", ...others.map((binding) => (binding === home ? "home" : binding))].join(", ");
}

// A figure of the Server-Timing header: queries, calls (round trips), rows_read or rows_written.
export function d1Cost(res: { headers: Headers }, figure: "queries" | "calls" | "rows_read" | "rows_written") {
	const match = new RegExp(`${figure}=(\\d+)`).exec(res.headers.get("server-timing") ?? "");
	if (!match) throw new Error(`no ${figure} in Server-Timing`);
	return Number(match[1]);
}

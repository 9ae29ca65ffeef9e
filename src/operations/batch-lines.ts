import { ApiError } from "../base/errors";
import type { ErrorDetail } from "../base/errors";
import { validate } from "../base/validation";
import { BATCHABLE, type BatchableName } from "./batchable";

// A batch's input file (docs/batches.md, "The input file"): UTF-8 NDJSON, one call of the batch's
// operation per line, `{"params": {…}, "query": {…}, "body": …}`. Lines are read from byte
// windows of the file; each is checked by the operation's own schemas, which refuse what the
// operation would refuse with 400101 before reading any state.

// A line longer than this is an error, not parsed further (the bound of a request's JSON body).
export const MAX_LINE_BYTES = 65_536;

export type LineError = { line: number; path: string; message: string };

// A line as it runs: the route's parameters by the operation's own names, query values as a URL
// carries them, and the body (undefined: none).
export type ParsedLine = { params: Record<string, string>; query: Record<string, string>; body: unknown };

const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

// The complete lines of a window of the file that starts at a line's first byte: each line's
// bytes (a `\r` before its `\n` dropped) and the offset in the window where the next line
// starts. At the file's end (`last`) the text after the last `\n` is a line too, unless it is
// empty (one final `\n` opens no line). Bytes after the last complete line wait for the next window,
// and so do the lines after the first `max`.
export function linesOf(
	window: Uint8Array,
	last: boolean,
	max = Number.POSITIVE_INFINITY,
): { bytes: Uint8Array; next: number }[] {
	const lines: { bytes: Uint8Array; next: number }[] = [];
	let start = 0;
	for (let i = 0; i < window.length && lines.length < max; i++) {
		if (window[i] !== 0x0a) continue;
		const end = i > start && window[i - 1] === 0x0d ? i - 1 : i;
		lines.push({ bytes: window.subarray(start, end), next: i + 1 });
		start = i + 1;
	}
	if (last && start < window.length && lines.length < max) {
		const rest = window.subarray(start);
		lines.push({
			bytes: rest[rest.length - 1] === 0x0d ? rest.subarray(0, rest.length - 1) : rest,
			next: window.length,
		});
	}
	return lines;
}

const MEMBERS = new Set(["params", "query", "body"]);

// The line's errors, one per failing field, in the order the fields are checked: the line itself,
// then params, query and body. None: the line runs as `parsed`.
export function checkLine(
	name: BatchableName,
	bytes: Uint8Array,
	line: number,
): { errors: LineError[] } | { errors: []; parsed: ParsedLine } {
	const fail = (path: string, message: string) => ({ errors: [{ line, path, message }] });
	if (bytes.length > MAX_LINE_BYTES) return fail("", `Longer than ${MAX_LINE_BYTES} bytes`);
	if (bytes.length === 0) return fail("", "A blank line: every line is one JSON object");
	let text: string;
	try {
		text = decoder.decode(bytes);
	} catch {
		return fail("", "Not UTF-8");
	}
	let value: unknown;
	try {
		value = JSON.parse(text);
	} catch {
		return fail("", "Not JSON");
	}
	if (typeof value !== "object" || value === null || Array.isArray(value))
		return fail("", "Must be a JSON object with params, query and body");
	return checkCall(name, value as Record<string, unknown>, line, "");
}

// A call's members checked by the operation's schemas; `prefix` places the paths (a match
// batch's template is checked as `template.`).
export function checkCall(
	name: BatchableName,
	value: Record<string, unknown>,
	line: number,
	prefix: string,
): { errors: LineError[] } | { errors: []; parsed: ParsedLine } {
	const { operation, params: names } = BATCHABLE[name];
	const errors: LineError[] = [];
	const at = (path: string) => `${prefix}${path}`;
	for (const key of Object.keys(value))
		if (!MEMBERS.has(key)) errors.push({ line, path: at(key), message: "Unknown field" });
	const params = renamed(value.params, names, (path, message) => errors.push({ line, path: at(path), message }));
	if (params && operation.params) collect(() => validate(operation.params!, params), "params", names, at, line, errors);
	const query = queryOf(value.query, (path, message) => errors.push({ line, path: at(path), message }));
	if (query && value.query !== undefined && !operation.query && Object.keys(query).length)
		for (const key of Object.keys(query)) errors.push({ line, path: at(`query.${key}`), message: "Unknown field" });
	if (query && operation.query) collect(() => validate(operation.query!, query), "query", null, at, line, errors);
	const body = value.body;
	if (body !== undefined && !operation.body)
		errors.push({ line, path: at("body"), message: "This operation reads no body" });
	if (operation.body)
		collect(() => validate(operation.body as never, body === undefined ? {} : body), "body", null, at, line, errors);
	if (errors.length) return { errors };
	return { errors: [], parsed: { params: params ?? {}, query: query ?? {}, body } };
}

// The line's params by the route's names: exactly the operation's, as strings.
function renamed(
	given: unknown,
	names: Record<string, string>,
	fail: (path: string, message: string) => void,
): Record<string, string> | undefined {
	if (given === undefined && Object.keys(names).length === 0) return {};
	if (typeof given !== "object" || given === null || Array.isArray(given)) {
		fail("params", "Must be an object of the route's parameters");
		return undefined;
	}
	const out: Record<string, string> = {};
	let ok = true;
	for (const [key, v] of Object.entries(given)) {
		const own = Object.hasOwn(names, key) ? names[key] : undefined;
		if (own === undefined) {
			fail(`params.${key}`, "Unknown field");
			ok = false;
		} else if (typeof v !== "string") {
			fail(`params.${key}`, "Must be a string");
			ok = false;
		} else out[own] = v;
	}
	for (const key of Object.keys(names))
		if (!Object.hasOwn(given, key)) {
			fail(`params.${key}`, "Required: a string");
			ok = false;
		}
	return ok ? out : undefined;
}

// Query values as a URL would carry them: strings, numbers and booleans as JSON prints them.
function queryOf(given: unknown, fail: (path: string, message: string) => void): Record<string, string> | undefined {
	if (given === undefined) return {};
	if (typeof given !== "object" || given === null || Array.isArray(given)) {
		fail("query", "Must be an object of query parameters");
		return undefined;
	}
	const out: Record<string, string> = {};
	let ok = true;
	for (const [key, v] of Object.entries(given)) {
		if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") out[key] = String(v);
		else {
			fail(`query.${key}`, "Must be a string, a number or a boolean");
			ok = false;
		}
	}
	return ok ? out : undefined;
}

// The schema's refusals as the line's errors, under the member's name; params by the line's names.
function collect(
	check: () => unknown,
	member: "params" | "query" | "body",
	names: Record<string, string> | null,
	at: (path: string) => string,
	line: number,
	errors: LineError[],
) {
	try {
		check();
	} catch (error) {
		if (!(error instanceof ApiError) || !error.details) throw error;
		const back = names ? Object.fromEntries(Object.entries(names).map(([k, v]) => [v, k])) : {};
		for (const detail of error.details as ErrorDetail[]) {
			const path = detail.path === "body" ? "" : String(detail.path);
			const [head, ...rest] = path.split(".");
			const named = head !== undefined && Object.hasOwn(back, head) ? [back[head], ...rest].join(".") : path;
			errors.push({ line, path: at(named ? `${member}.${named}` : member), message: detail.message });
		}
	}
}

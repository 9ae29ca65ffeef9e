import { ApiError } from "../base/errors";

export const MAX_BODY_BYTES = 64 * 1024;

// Reads at most MAX_BODY_BYTES: a declared or streamed body beyond that is refused before it
// is buffered whole, so a large upload cannot exhaust the isolate's memory.
export async function readBody(request: Request): Promise<Uint8Array | undefined> {
	const declared = Number(request.headers.get("content-length") ?? "0");
	if (declared > MAX_BODY_BYTES) throw new ApiError("body_too_large");
	if (!request.body) return undefined;

	const reader = request.body.getReader();
	const chunks: Uint8Array[] = [];
	let size = 0;
	for (;;) {
		const { done, value } = await reader.read();
		if (done) break;
		size += value.byteLength;
		if (size > MAX_BODY_BYTES) {
			await reader.cancel();
			throw new ApiError("body_too_large");
		}
		chunks.push(value);
	}
	if (size === 0) return undefined;

	const bytes = new Uint8Array(size);
	let offset = 0;
	for (const chunk of chunks) {
		bytes.set(chunk, offset);
		offset += chunk.byteLength;
	}
	return bytes;
}

export const MAX_JSON_DEPTH = 64;
// JSON.parse makes "__proto__" an own key, but every object that validation and the handlers
// build from a body gets its keys by assignment, where this one is the prototype's setter: the
// key would vanish without a word (a condition ignored, an entry answered but never stored).
export const RESERVED_KEY = "__proto__";

export function parseJson(bytes: Uint8Array | undefined): unknown {
	if (!bytes) return undefined;
	let value: unknown;
	try {
		value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
	} catch {
		throw new ApiError("malformed_json");
	}
	checkShape(value);
	return value;
}

// A value met by the walk, linked to its parent so the walk keeps one small record per object
// and spells a path only for a refusal.
type Step = { value: object; depth: number; key: string; parent?: Step };

// Validation walks a body recursively, and a 64 KiB body can nest thousands of levels deep:
// this walk is iterative, so that checking a deep value cannot itself overflow the stack, and
// it holds at most one record per object or list of the body.
function checkShape(root: unknown) {
	if (root === null || typeof root !== "object") return;
	const stack: Step[] = [{ value: root, depth: 1, key: "" }];
	for (let step = stack.pop(); step; step = stack.pop()) {
		if (step.depth > MAX_JSON_DEPTH) throw tooDeep();
		const list = Array.isArray(step.value);
		for (const [key, child] of Object.entries(step.value)) {
			if (!list && key === RESERVED_KEY) throw reserved(pathOf(step, key));
			if (child !== null && typeof child === "object")
				stack.push({ value: child, depth: step.depth + 1, key, parent: step });
		}
	}
}

// The dot path of `key` in `parent`, as validation names a field (`entries.a.value.0.b`).
function pathOf(parent: Step, key: string): string {
	const keys = [key];
	// The root's own record has no key of its own.
	for (let at: Step | undefined = parent; at?.parent; at = at.parent) keys.push(at.key);
	return keys.reverse().join(".");
}

function tooDeep() {
	return new ApiError("validation", {
		description: `The body is nested deeper than ${MAX_JSON_DEPTH} levels`,
		details: [{ path: "body", message: `Nested deeper than ${MAX_JSON_DEPTH} levels` }],
	});
}

function reserved(path: string) {
	const message = `"${RESERVED_KEY}" is a reserved key`;
	return new ApiError("validation", { description: `${path}: ${message}`, details: [{ path, message }] });
}

// The media type of the request's content-type, without its parameters, in lower case; ""
// when none was sent.
export function mediaType(request: Request): string {
	return (request.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
}

const MERGE_PATCH = "application/merge-patch+json";
// JSON Patch (RFC 6902): a list of operations, which read as JSON would mean something else.
const JSON_PATCH = "application/json-patch+json";
const ACCEPT_PATCH = `application/json, ${MERGE_PATCH}`;

// Whether a route that reads merge patches got one: a body sent as application/merge-patch+json
// (parameters allowed). Any other type, or none, is read as JSON with the route's replace
// semantics; a JSON Patch is refused, naming what the route reads.
export function isMergePatch(request: Request): boolean {
	const type = mediaType(request);
	if (type === JSON_PATCH) {
		throw new ApiError("unsupported_patch_format", {
			description: `${JSON_PATCH} is not read here: send the body as ${MERGE_PATCH}, or as application/json to replace the fields it gives`,
			headers: { "accept-patch": ACCEPT_PATCH },
		});
	}
	return type === MERGE_PATCH;
}

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

export function parseJson(bytes: Uint8Array | undefined): unknown {
	if (!bytes) return undefined;
	let value: unknown;
	try {
		value = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
	} catch {
		throw new ApiError("malformed_json");
	}
	// Validation walks a body recursively; a 64 KiB body can nest thousands of levels deep.
	if (depthOf(value) > MAX_JSON_DEPTH) {
		throw new ApiError("validation", { description: `The body is nested deeper than ${MAX_JSON_DEPTH} levels`, details: [
			{ path: "body", message: `Nested deeper than ${MAX_JSON_DEPTH} levels` },
		] });
	}
	return value;
}

// Iterative, so that measuring a deep value cannot itself overflow the stack.
function depthOf(root: unknown): number {
	let deepest = 0;
	const stack: [unknown, number][] = [[root, 1]];
	while (stack.length) {
		const [value, depth] = stack.pop() as [unknown, number];
		if (value === null || typeof value !== "object") continue;
		deepest = Math.max(deepest, depth);
		if (deepest > MAX_JSON_DEPTH) return deepest;
		for (const child of Object.values(value)) stack.push([child, depth + 1]);
	}
	return deepest;
}

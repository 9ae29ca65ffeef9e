import type { Credential, Description } from "../base/caller";
import { ApiError } from "../base/errors";
import { fromBase64Url } from "../base/crypto";

// The request's dictionary, read by rules as DICT. A token carries its own (a User Token its
// secret_dict, `{}` without one; a stream token its maker's) and the header is ignored: a
// front-end cannot override what its backend fixed. Otherwise the X-TrustedTwin header: base64 (either alphabet, padding optional) of the
// UTF-8 JSON of an object, at most 4096 characters; null without the header. A header that
// cannot be read is refused, so that a client learns its dictionary was not used rather than
// silently seeing less.
export const DICT_HEADER = "x-trustedtwin";
const MAX_DICT_HEADER = 4096;

export function dictOf(request: Request, credential: Credential): Description | null {
	if (credential.type === "token") return credential.token?.dict ?? {};
	// A stream token carries the dictionary of the request that made it.
	if (credential.type === "stream") return credential.stream?.dict ?? null;
	const header = request.headers.get(DICT_HEADER);
	if (header === null) return null;
	const dict = header.length <= MAX_DICT_HEADER ? parse(header.trim()) : undefined;
	if (dict === undefined) {
		const message = `Must be base64 of a JSON object, at most ${MAX_DICT_HEADER} characters`;
		throw new ApiError("validation", { details: [{ path: "X-TrustedTwin", message }] });
	}
	return dict;
}

function parse(text: string): Description | undefined {
	if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(text)) return undefined;
	const bytes = fromBase64Url(text.replace(/=+$/, ""));
	if (!bytes) return undefined;
	try {
		const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes));
		return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Description) : undefined;
	} catch {
		return undefined;
	}
}

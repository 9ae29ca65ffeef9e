import { ApiError } from "../base/errors";

// An entity tag (RFC 9110 §8.8.3): strong `"<opaque>"` or weak `W/"<opaque>"`, the opaque part
// any visible ASCII but `"`, or obs-text; with the list's optional whitespace around it.
const TAG = /[ \t]*(W\/)?"([\x21\x23-\x7e\x80-\xff]*)"[ \t]*/y;

// If-Match (RFC 9110 §13.1.1) as what it asks: "*" (any current representation), or the opaque
// parts of its strong tags, since the comparison is strong and a weak tag never matches;
// undefined without the header. A list may hold empty elements (RFC 9110 §5.6.1), but must name a tag.
// Anything else is 400101 naming the header.
export function ifMatch(header: string | undefined): "*" | string[] | undefined {
	if (header === undefined) return undefined;
	if (header === "*") return "*";
	const strong: string[] = [];
	let tags = 0;
	for (let at = 0; ; at++) {
		TAG.lastIndex = at;
		const tag = TAG.exec(header);
		if (tag) {
			tags++;
			if (!tag[1]) strong.push(tag[2]);
			at = TAG.lastIndex;
		} else {
			while (header[at] === " " || header[at] === "\t") at++;
		}
		if (at === header.length) break;
		if (header[at] !== ",") throw malformed();
	}
	if (tags === 0) throw malformed();
	return strong;
}

function malformed() {
	const message = 'Must be * or a comma-separated list of entity tags, such as "abc" or W/"abc"';
	return new ApiError("validation", { description: `If-Match: ${message}`, details: [{ path: "If-Match", message }] });
}

// Browsers may call every route from any origin. Credentials travel in headers, never in
// cookies, so `*` lets a page send nothing it could not send anyway; a preflight is answered
// before routing, for every path, and every answer names the headers a page may read.
const PREFLIGHT = {
	"access-control-allow-origin": "*",
	"access-control-allow-methods": "GET, POST, PATCH, DELETE",
	"access-control-allow-headers":
		"authorization, content-type, x-trustedtwin, idempotency-key, if-match, traceparent, last-event-id",
	"access-control-max-age": "86400",
};

const EXPOSED = "x-request-id, server-timing, x-d1-bookmark, idempotent-replayed, etag";

export function preflight(): Response {
	return new Response(null, { status: 204, headers: PREFLIGHT });
}

export function allowOrigins(headers: Headers) {
	headers.set("access-control-allow-origin", "*");
	headers.set("access-control-expose-headers", EXPOSED);
}

import type { ApiError } from "../base/errors";

// The wire form of an ApiError (the catalogue and the class live in the base layer); its schema
// for the API document is errorEnvelope in openapi.ts. No zod here: every isolate loads this
// module, and zod waits for the first request that validates (pipeline.ts).
export function errorResponse(error: ApiError, trace: string): Response {
	const body: Record<string, unknown> = { subcode: error.subcode, code: error.code, trace, description: error.message };
	if (error.details) body.details = error.details;
	return Response.json(body, { status: error.status, headers: error.headers });
}

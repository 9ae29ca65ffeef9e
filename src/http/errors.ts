import * as z from "zod";
import type { ApiError } from "../base/errors";

// The wire form of an ApiError (the catalogue and the class live in the base layer).
export const errorEnvelope = z.object({
	subcode: z.number().int().meta({ description: "status * 1000 + n; see the catalogue" }),
	trace: z.string().meta({ description: "The request id, as in the x-request-id header" }),
	description: z.string(),
	details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
});

export function errorResponse(error: ApiError, trace: string): Response {
	const body: Record<string, unknown> = { subcode: error.subcode, trace, description: error.message };
	if (error.details) body.details = error.details;
	return Response.json(body, { status: error.status, headers: error.headers });
}

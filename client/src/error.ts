// The service's error envelope as an exception, and the catalogue's subcodes by name.
import { ERRORS } from "./codes.js";
import type { components } from "./schema.js";

export { ERRORS };
export type ErrorCode = keyof typeof ERRORS;
export type ErrorEnvelope = components["schemas"]["Error"];
export type ErrorDetail = NonNullable<ErrorEnvelope["details"]>[number];

// Each code's subcode: `error.subcode === SUBCODES.idempotency_in_flight`.
export const SUBCODES = Object.fromEntries(Object.entries(ERRORS).map(([code, { subcode }]) => [code, subcode])) as {
	readonly [C in ErrorCode]: (typeof ERRORS)[C]["subcode"];
};

// Thrown for every answer that is not a success.
export class TwinRegistryError extends Error {
	override readonly name = "TwinRegistryError";
	readonly status: number;
	readonly subcode: number;
	readonly trace: string;
	readonly description: string;
	readonly details?: ErrorDetail[];
	// The catalogue's name of the error ("not_found"), when the answer carries one; a newer service
	// may answer a code this client does not know yet.
	readonly code?: ErrorCode | (string & {});

	constructor(
		status: number,
		subcode: number,
		trace: string,
		description: string,
		details?: ErrorDetail[],
		code?: string,
	) {
		super(`${status} ${subcode}: ${description} (trace ${trace})`);
		this.status = status;
		this.subcode = subcode;
		this.trace = trace;
		this.description = description;
		this.details = details;
		this.code = code;
	}

	// True when this is the catalogue's error `code`: compared by subcode, which every answer has.
	is(code: ErrorCode): boolean {
		return this.subcode === ERRORS[code].subcode;
	}

	// An answer that is not the envelope (a proxy's page, the platform's plain 405) keeps its
	// status, with subcode 0 and the request id from the header when there is one.
	static of(response: Response, body: unknown): TwinRegistryError {
		const envelope = (typeof body === "object" && body !== null ? body : {}) as Partial<ErrorEnvelope> & {
			code?: unknown;
		};
		const trace = typeof envelope.trace === "string" ? envelope.trace : (response.headers.get("x-request-id") ?? "");
		if (typeof envelope.subcode === "number" && typeof envelope.description === "string") {
			const code = typeof envelope.code === "string" ? envelope.code : undefined;
			return new TwinRegistryError(
				response.status,
				envelope.subcode,
				trace,
				envelope.description,
				envelope.details,
				code,
			);
		}
		return new TwinRegistryError(
			response.status,
			0,
			trace,
			typeof body === "string" && body ? body : response.statusText,
		);
	}

	// Reads the answer's body (JSON when it is, else text) into the error.
	static async from(response: Response): Promise<TwinRegistryError> {
		return TwinRegistryError.of(response, await readBody(response));
	}
}

// A body as JSON when it parses, else as text.
export async function readBody(response: Response): Promise<unknown> {
	const text = await response.text();
	try {
		return JSON.parse(text);
	} catch {
		return text;
	}
}

import * as z from "zod/mini";
import type { AuthKind, Operation } from "../operations/operation";
import type { LoadedRoute } from "./route";
import { type ErrorCode, ERRORS } from "../base/errors";
import { ANY_JSON } from "../base/json";
import { withMeta } from "../operations/schemas";

// The API document, built from the route table and the very zod schemas that validate
// requests and shape answers.

// The error envelope errorResponse (errors.ts) writes.
const errorEnvelope = z.object({
	subcode: withMeta(z.number().check(z.int()), { description: "status * 1000 + n; see the catalogue" }),
	code: withMeta(z.enum(Object.keys(ERRORS) as [ErrorCode, ...ErrorCode[]]), {
		description: "The catalogue's stable name of the subcode (not_found, escalation, ...)",
	}),
	trace: withMeta(z.string(), { description: "The request id, as in the x-request-id header" }),
	description: z.string(),
	details: z.optional(z.array(z.object({ path: z.string(), message: z.string() }))),
});

type JsonSchema = Record<string, unknown>;

// Definitions a schema carries in its own $defs would not resolve once it is embedded in the
// document, so they move to components.schemas under the id their zod schema registers
// (`.meta({ id })`), and their refs follow. A definition zod had to name itself (a recursive
// schema without an id) would reach clients as a meaningless name, so it fails the build, and
// so does one id given two different shapes.
function hoistDefinitions(schema: JsonSchema, shared: Record<string, JsonSchema>): JsonSchema {
	const { $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
	if (!$defs) return rest;
	const rewrite = (value: unknown): unknown => {
		if (Array.isArray(value)) return value.map(rewrite);
		if (value === null || typeof value !== "object") return value;
		return Object.fromEntries(
			Object.entries(value).map(([k, v]) => [
				k,
				k === "$ref" && typeof v === "string" ? v.replace("#/$defs/", "#/components/schemas/") : rewrite(v),
			]),
		);
	};
	for (const [name, definition] of Object.entries($defs)) {
		if (/^__schema\d+$/.test(name))
			throw new Error(
				`A shared schema has no name: give it .meta({ id }) (${JSON.stringify(definition).slice(0, 120)})`,
			);
		const moved = rewrite(definition) as JsonSchema;
		if (shared[name] && JSON.stringify(shared[name]) !== JSON.stringify(moved))
			throw new Error(`Two shapes are named ${name}`);
		shared[name] = moved;
	}
	return rewrite(rest) as JsonSchema;
}

// A schema marked ANY_JSON in its metadata (z.json() is recursive) is described as "any JSON
// value" rather than spelled out.
function jsonSchema(schema: z.ZodMiniType, io: "input" | "output", shared: Record<string, JsonSchema>): JsonSchema {
	const { $schema: _, ...rest } = z.toJSONSchema(schema, {
		io,
		unrepresentable: "any",
		reused: "inline",
		override: ({ zodSchema, jsonSchema: out }) => {
			if (z.globalRegistry.get(zodSchema)?.[ANY_JSON] !== true) return;
			for (const key of Object.keys(out)) delete (out as JsonSchema)[key];
			Object.assign(out, { description: "Any JSON value" });
		},
	}) as JsonSchema;
	return hoistDefinitions(rest, shared);
}

// What a request header means, where the name alone does not say.
const HEADER_NOTES: Record<string, string> = {
	"if-match":
		"* or a comma-separated list of ETags: the write runs only while the resource's current ETag is one of them (a weak tag never matches), else 412251",
};

function headerParameters(names: readonly string[] | undefined) {
	return (names ?? []).map((name) => ({
		name,
		in: "header",
		required: false,
		...(HEADER_NOTES[name] && { description: HEADER_NOTES[name] }),
		schema: { type: "string" },
	}));
}

const ETAG = {
	ETag: {
		description: "The resource's current entity tag, strong: send it back in If-Match",
		schema: { type: "string" },
	},
};

// Query values arrive as text and are parsed by transforms (`count=20` to 20, `details=1` to
// true, `entries=a,b` to a list), so a query parameter is described by what its schema parses
// to: the type a client passes. A list is one parameter of comma-separated items (form style,
// not exploded), which openapi-fetch writes when its query serializer is told so.
function takesList(schema: JsonSchema): boolean {
	return schema.type === "array" || ((schema.anyOf as JsonSchema[] | undefined) ?? []).some(takesList);
}

function parameters(schema: z.ZodMiniType | undefined, where: "path" | "query", shared: Record<string, JsonSchema>) {
	if (!(schema instanceof z.ZodMiniObject)) return [];
	return Object.entries(schema.shape as Record<string, z.ZodMiniType>).map(([name, field]) => {
		const described = jsonSchema(field, where === "query" ? "output" : "input", shared);
		return {
			name,
			in: where,
			required: where === "path" || !field.safeParse(undefined).success,
			schema: described,
			...(takesList(described) && { style: "form", explode: false }),
		};
	});
}

// Refusals every operation of a kind may answer, before or around its own work: the
// credential and the statement (a run of failed authentications from one address is 429),
// the secret a URL carries, validation of whatever the request holds, and the JSON body.
const SHARED_REFUSALS: Record<AuthKind, ErrorCode[]> = {
	secret: ["missing_credential", "unknown_credential", "expired_credential", "operation_forbidden", "rate_limited"],
	admin: ["missing_credential", "unknown_credential", "rate_limited"],
	none: ["rate_limited"],
	capability: ["upload_not_found", "rate_limited"],
	exchange: ["rate_limited"],
};

// A POST or PATCH with a user's credential takes an Idempotency-Key, unless its answer carries
// a credential or a key (see http/idempotency.ts).
function takesKey(operation: Operation, method: string): boolean {
	return (method === "POST" || method === "PATCH") && operation.auth === "secret" && operation.replays !== false;
}

const IDEMPOTENCY_KEY = {
	name: "Idempotency-Key",
	in: "header",
	required: false,
	description:
		"Sent again with the same request within 24 hours, replays the first answer (`idempotent-replayed: true`) instead of running it again",
	schema: { type: "string", minLength: 1, maxLength: 255, pattern: "^[\\x21-\\x7e]+$" },
};

function refusals(operation: Operation, method: string): ErrorCode[] {
	const codes: ErrorCode[] = [...SHARED_REFUSALS[operation.auth]];
	if (takesKey(operation, method)) codes.push("idempotency_in_flight", "idempotency_quota", "idempotency_mismatch");
	if (operation.params || operation.query || operation.body || operation.headers) codes.push("validation");
	if (operation.body && operation.body !== "stream") codes.push("malformed_json", "body_too_large");
	if (operation.merge) codes.push("unsupported_patch_format");
	codes.push(...(operation.refuses ?? []), "internal");
	return [...new Set(codes)].sort((a, b) => ERRORS[a].subcode - ERRORS[b].subcode);
}

// Headers a refusal of a status carries besides the envelope: what a client needs to try again.
const REFUSAL_HEADERS: Partial<Record<number, Record<string, { description: string; schema: JsonSchema }>>> = {
	412: ETAG,
	415: { "Accept-Patch": { description: "The patch formats the route reads", schema: { type: "string" } } },
};

// Every status the operation may answer with besides success, each with the envelope and the
// subcodes it carries then; an unknown route (404101) and a wrong method (405101) belong to
// every path.
function errorResponses(operation: Operation, method: string) {
	const codes = refusals(operation, method);
	const statuses = new Set([...codes.map((code) => ERRORS[code].status), 404, 405]);
	return Object.fromEntries(
		[...statuses]
			.sort((a, b) => a - b)
			.map((status) => {
				const own = codes.filter((code) => ERRORS[code].status === status).map((code) => ERRORS[code]);
				const routeLevel = Object.values(ERRORS).filter(
					(e) => e.status === status && (e.subcode === 404101 || e.subcode === 405101),
				);
				const description = [...routeLevel, ...own].map((e) => `${e.subcode}: ${e.description}`).join("; ");
				const headers = REFUSAL_HEADERS[status];
				return [
					String(status),
					{
						description,
						...(headers && { headers }),
						content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
					},
				];
			}),
	);
}

const CALLERS: Record<AuthKind, (operation: Operation) => string> = {
	secret: (operation) =>
		`A user whose role's statement allows \`${operation.name}\`, with its User Secret or a User Token in \`Authorization\`` +
		(operation.streamToken ? " (or a stream token in `access_token`)" : ""),
	admin: () => "The server's operator: `Authorization: Bearer <ADMIN_TOKEN>`; no statement applies",
	none: () =>
		"Anyone holding the secret value in the URL (a PIN, or a subscription's token); no credential or statement",
	capability: () => "Anyone holding the URL (an upload or download URL); no credential or statement",
	exchange: () =>
		"Anyone holding an ID token of an identity provider the account trusts; no credential (Authorization is ignored), and the linked user's statement must allow it",
};

// The operation's own text, then who may call it and every refusal with its subcode.
function describe(operation: Operation, method: string): string {
	const refused = refusals(operation, method).map(
		(code) => `- ${ERRORS[code].subcode} (${ERRORS[code].status}): ${ERRORS[code].description}`,
	);
	return [
		operation.description ?? operation.summary,
		`**Who may call it:** ${CALLERS[operation.auth](operation)}.`,
		`**Refusals:**\n${refused.join("\n")}`,
	].join("\n\n");
}

// A route that reads merge patches states both media types: application/json with the body's
// schema (replace), application/merge-patch+json with the patch's.
function requestBody(operation: Operation, shared: Record<string, JsonSchema>) {
	const { body, example, merge } = operation;
	if (body === "stream")
		return {
			required: true,
			content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } },
		};
	const schema = jsonSchema(body as z.ZodMiniType, "input", shared);
	const patch = merge && {
		"application/merge-patch+json": {
			schema: jsonSchema(merge.body as z.ZodMiniType, "input", shared),
			example: merge.example,
		},
	};
	return {
		required: !(body as z.ZodMiniType).safeParse(undefined).success,
		content: { "application/json": { schema, ...(example !== undefined && { example }) }, ...patch },
	};
}

function success(operation: Operation, shared: Record<string, JsonSchema>) {
	if (operation.answers === "bytes")
		return { "application/octet-stream": { schema: { type: "string", format: "binary" } } };
	if (operation.answers === "events")
		return {
			"text/event-stream": {
				schema: { type: "string", description: "Server-Sent Events; a WebSocket (101) on an Upgrade request" },
			},
		};
	return { "application/json": { schema: jsonSchema(operation.response, "output", shared) } };
}

function operationObject(operation: Operation, method: string, shared: Record<string, JsonSchema>) {
	const status = String(operation.status ?? 200);
	return {
		operationId: operation.name,
		summary: operation.summary,
		description: describe(operation, method),
		security: operation.auth === "secret" ? [{ apiKey: [] }] : operation.auth === "admin" ? [{ adminToken: [] }] : [],
		parameters: [
			...parameters(operation.params, "path", shared),
			...parameters(operation.query, "query", shared),
			...headerParameters(operation.headers),
			...(takesKey(operation, method) ? [IDEMPOTENCY_KEY] : []),
		],
		...(operation.body && { requestBody: requestBody(operation, shared) }),
		responses: {
			[status]: {
				description: "Success",
				...(operation.etag && { headers: ETAG }),
				content: success(operation, shared),
			},
			...errorResponses(operation, method),
		},
	};
}

export function openApiDocument(routes: LoadedRoute[]) {
	const paths: Record<string, Record<string, unknown>> = {};
	const schemas: Record<string, JsonSchema> = {};
	schemas.Error = jsonSchema(errorEnvelope, "output", schemas);
	for (const { method, path, operation } of routes) {
		const templated = path.replace(/:(\w+)\+?/g, "{$1}");
		// Grouped on the page by the first segment of the path: users, roles, twins, ...
		const tags = [path.split("/")[1]];
		paths[templated] = {
			...paths[templated],
			[method.toLowerCase()]: { tags, ...operationObject(operation, method, schemas) },
		};
	}
	return {
		openapi: "3.1.0",
		info: {
			title: "Twin Registry",
			version: "1.0.0",
			description:
				"Twins, users, roles, secrets and webhook subscriptions of an account. Every operation's name is what a role's statement lists.",
		},
		components: {
			securitySchemes: {
				apiKey: {
					type: "apiKey",
					in: "header",
					name: "Authorization",
					description: "A User Secret or a User Token, raw or as `Bearer <credential>`",
				},
				adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN, for bootstrapping accounts" },
			},
			schemas,
		},
		paths,
	};
}

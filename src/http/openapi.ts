import * as z from "zod";
import type { AuthKind, Operation } from "../operations/operation";
import type { Route } from "./route";
import { ERRORS } from "../base/errors";
import { ANY_JSON } from "../base/json";
import { errorEnvelope } from "./errors";

// The API document, built from the route table and the very zod schemas that validate
// requests and shape answers.

type JsonSchema = Record<string, unknown>;

// Definitions a schema carries in its own $defs would not resolve once it is embedded in the
// document, so they move to components.schemas (equal ones shared) and their refs follow.
function hoistDefinitions(schema: JsonSchema, shared: Record<string, JsonSchema>): JsonSchema {
	const { $defs, ...rest } = schema as JsonSchema & { $defs?: Record<string, JsonSchema> };
	if (!$defs) return rest;
	const names = new Map<string, string>();
	for (const [local, definition] of Object.entries($defs)) {
		const text = JSON.stringify(definition);
		const existing = Object.entries(shared).find(([, d]) => JSON.stringify(d) === text)?.[0];
		const name = existing ?? `Definition${Object.keys(shared).length + 1}`;
		shared[name] = definition;
		names.set(`#/$defs/${local}`, `#/components/schemas/${name}`);
	}
	const rewrite = (value: unknown): unknown => {
		if (Array.isArray(value)) return value.map(rewrite);
		if (value === null || typeof value !== "object") return value;
		return Object.fromEntries(
			Object.entries(value).map(([k, v]) => [k, k === "$ref" && names.has(v as string) ? names.get(v as string) : rewrite(v)]),
		);
	};
	for (const name of new Set(names.values())) {
		const key = name.split("/").at(-1) as string;
		shared[key] = rewrite(shared[key]) as JsonSchema;
	}
	return rewrite(rest) as JsonSchema;
}

// A schema marked ANY_JSON in its metadata (z.json() is recursive) is described as "any JSON
// value" rather than spelled out.
function jsonSchema(schema: z.ZodType, io: "input" | "output", shared: Record<string, JsonSchema>): JsonSchema {
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

function headerParameters(names: readonly string[] | undefined) {
	return (names ?? []).map((name) => ({ name, in: "header", required: false, schema: { type: "string" } }));
}

function parameters(schema: z.ZodType | undefined, where: "path" | "query", shared: Record<string, JsonSchema>) {
	if (!(schema instanceof z.ZodObject)) return [];
	return Object.entries(schema.shape as Record<string, z.ZodType>).map(([name, field]) => ({
		name,
		in: where,
		required: where === "path" || !field.safeParse(undefined).success,
		schema: jsonSchema(field, "input", shared),
	}));
}

const ERROR_STATUSES: Record<AuthKind, number[]> = {
	secret: [400, 401, 403, 404, 405, 413, 500],
	admin: [400, 401, 404, 405, 413, 500],
	none: [400, 404, 405, 413, 500],
	capability: [400, 404, 405, 409, 411, 413, 416, 429, 500],
};

function errorResponses(auth: AuthKind) {
	return Object.fromEntries(
		ERROR_STATUSES[auth].map((status) => {
			const codes = Object.values(ERRORS).filter((e) => e.status === status);
			const description = codes.map((e) => `${e.subcode}: ${e.description}`).join("; ");
			return [String(status), { description, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } }];
		}),
	);
}

function requestBody(body: z.ZodType | "stream", shared: Record<string, JsonSchema>) {
	if (body === "stream") return { required: true, content: { "application/octet-stream": { schema: { type: "string", format: "binary" } } } };
	return { required: true, content: { "application/json": { schema: jsonSchema(body, "input", shared) } } };
}

function success(operation: Operation, shared: Record<string, JsonSchema>) {
	if (operation.answers === "bytes") return { "application/octet-stream": { schema: { type: "string", format: "binary" } } };
	if (operation.answers === "events") return { "text/event-stream": { schema: { type: "string", description: "Server-Sent Events; a WebSocket (101) on an Upgrade request" } } };
	return { "application/json": { schema: jsonSchema(operation.response, "output", shared) } };
}

function operationObject(operation: Operation, shared: Record<string, JsonSchema>) {
	const status = String(operation.status ?? 200);
	return {
		operationId: operation.name,
		summary: operation.summary,
		security: operation.auth === "secret" ? [{ apiKey: [] }] : operation.auth === "admin" ? [{ adminToken: [] }] : [],
		parameters: [
			...parameters(operation.params, "path", shared),
			...parameters(operation.query, "query", shared),
			...headerParameters(operation.headers),
		],
		...(operation.body && { requestBody: requestBody(operation.body, shared) }),
		responses: {
			[status]: { description: "Success", content: success(operation, shared) },
			...errorResponses(operation.auth),
		},
	};
}

export function openApiDocument(routes: Route[]) {
	const paths: Record<string, Record<string, unknown>> = {};
	const schemas: Record<string, JsonSchema> = {};
	schemas.Error = jsonSchema(errorEnvelope, "output", schemas);
	for (const { method, path, operation } of routes) {
		const templated = path.replace(/:(\w+)\+?/g, "{$1}");
		// Grouped on the page by the first segment of the path: users, roles, twins, ...
		const tags = [path.split("/")[1]];
		paths[templated] = { ...paths[templated], [method.toLowerCase()]: { tags, ...operationObject(operation, schemas) } };
	}
	return {
		openapi: "3.1.0",
		info: {
			title: "Twin Registry",
			version: "1.0.0",
			description: "Twins, users, roles, secrets and webhook subscriptions of an account. Every operation's name is what a role's statement lists.",
		},
		components: {
			securitySchemes: {
				apiKey: { type: "apiKey", in: "header", name: "Authorization", description: "A User Secret or a User Token, raw or as `Bearer <credential>`" },
				adminToken: { type: "http", scheme: "bearer", description: "ADMIN_TOKEN, for bootstrapping accounts" },
			},
			schemas,
		},
		paths,
	};
}

import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/http/openapi";
import { routes as table } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";

const routes = await loadRoutes(table);

// Every answer is bounded: a list in a success answer (an array, or an object keyed by name or
// uuid) declares how many members it may hold, so a route whose list could grow without limit
// fails here the day it is added. The declared bounds are also checked on every answer by the
// response schemas they come from; the byte bound (4 MiB) is each route's own test's.

type Schema = Record<string, unknown>;
const document = JSON.parse(JSON.stringify(openApiDocument(routes)));

function resolve(schema: Schema): Schema {
	const ref = schema.$ref as string | undefined;
	return ref ? document.components.schemas[ref.split("/").at(-1) as string] : schema;
}

// The paths, inside one schema, of the lists that declare no bound.
function unbounded(schema: Schema, path: string, seen = new Set<Schema>()): string[] {
	const node = resolve(schema);
	if (seen.has(node)) return [];
	seen.add(node);
	// Values the caller wrote (descriptions, entry values) are bounded by the limits on writing them.
	if (node.description === "Any JSON value") return [];
	const found: string[] = [];
	if (node.type === "array" && node.maxItems === undefined) found.push(path);
	if (node.type === "object" && typeof node.additionalProperties === "object" && node.maxProperties === undefined)
		found.push(path);
	const children: [string, Schema][] = [
		...Object.entries((node.properties ?? {}) as Record<string, Schema>).map(([key, child]): [string, Schema] => [
			`${path}.${key}`,
			child,
		]),
		...(typeof node.additionalProperties === "object"
			? [[`${path}.*`, node.additionalProperties as Schema] as [string, Schema]]
			: []),
		...(node.items ? [[`${path}[]`, node.items as Schema] as [string, Schema]] : []),
		...["anyOf", "oneOf", "allOf"].flatMap((key) =>
			((node[key] ?? []) as Schema[]).map((child): [string, Schema] => [path, child]),
		),
	];
	for (const [at, child] of children) found.push(...unbounded(child, at, seen));
	return found;
}

describe("every success answer", () => {
	it("bounds each of its lists", () => {
		const found: string[] = [];
		for (const [path, methods] of Object.entries(document.paths as Record<string, Record<string, Schema>>)) {
			for (const [method, operation] of Object.entries(methods)) {
				for (const [status, response] of Object.entries(operation.responses as Record<string, Schema>)) {
					if (!status.startsWith("2")) continue;
					const schema = (response.content as Record<string, { schema: Schema }> | undefined)?.["application/json"]
						?.schema;
					if (schema) found.push(...unbounded(schema, `${method.toUpperCase()} ${path}`));
				}
			}
		}
		expect(found).toEqual([]);
	});
});

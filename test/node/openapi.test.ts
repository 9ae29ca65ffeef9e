import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import type * as z from "zod/mini";
import { openApiDocument } from "../../src/http/openapi";
import { routes as table } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";

const routes = await loadRoutes(table);

type Parameter = { name: string; in: string; schema: Record<string, unknown>; style?: string; explode?: boolean };
type OperationObject = {
	operationId: string;
	description: string;
	parameters: Parameter[];
	requestBody?: { content: Record<string, { example?: unknown }> };
	responses: Record<string, { content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
};

const document = JSON.parse(JSON.stringify(openApiDocument(routes)));
const operations: OperationObject[] = Object.values(
	document.paths as Record<string, Record<string, OperationObject>>,
).flatMap((methods) => Object.values(methods));
const byName = (name: string) => operations.find((operation) => operation.operationId === name) as OperationObject;
const query = (operation: string, name: string) =>
	byName(operation).parameters.find((p) => p.in === "query" && p.name === name) as Parameter;

// Runs on Node: the validator compiles JSON Schemas to code, which the Workers runtime forbids.
describe("the API document", () => {
	it("is valid OpenAPI 3.1", async () => {
		const validator = new Validator();
		const result = await validator.validate(structuredClone(document));
		expect(result.errors ?? []).toEqual([]);
		expect(result.valid).toBe(true);
		expect(validator.version).toBe("3.1");
	});

	it("gives every operation a description of its own, with who may call it and its refusals", () => {
		expect(routes.filter((route) => !route.operation.description).map((route) => route.operation.name)).toEqual([]);
		for (const operation of operations) {
			expect(operation.description).toContain("**Who may call it:**");
			expect(operation.description).toMatch(/\*\*Refusals:\*\*\n- \d{6} /);
		}
	});

	it("gives every JSON body an example its own schema accepts", () => {
		for (const { operation } of routes) {
			if (!operation.body || operation.body === "stream") continue;
			expect(operation.example, operation.name).toBeDefined();
			const parsed = (operation.body as z.ZodMiniType).safeParse(operation.example);
			expect(parsed.error?.issues, operation.name).toBeUndefined();
			expect(byName(operation.name).requestBody?.content["application/json"].example).toEqual(operation.example);
		}
	});

	it("states a merge patch's media type, schema and example beside application/json where a route reads one", () => {
		const merging = routes.filter(({ operation }) => operation.merge);
		expect(merging.map(({ operation }) => operation.name).sort()).toEqual([
			"update_twin",
			"update_twin_ledger_entry",
			"update_twin_ledger_entry_value",
			"update_user",
			"update_user_role",
		]);
		for (const { operation } of merging) {
			const parsed = (operation.merge!.body as z.ZodMiniType).safeParse(operation.merge!.example);
			expect(parsed.error?.issues, operation.name).toBeUndefined();
			const documented = byName(operation.name);
			expect(Object.keys(documented.requestBody?.content ?? {})).toEqual([
				"application/json",
				"application/merge-patch+json",
			]);
			expect(documented.requestBody?.content["application/merge-patch+json"].example).toEqual(operation.merge!.example);
			expect(documented.responses["415"]).toMatchObject({
				description: expect.stringContaining("415251"),
				headers: { "Accept-Patch": expect.any(Object) },
			});
		}
		expect(byName("update_twin_identity").requestBody?.content).not.toHaveProperty("application/merge-patch+json");
	});

	it("states the twins' ETag answers and If-Match, with the 412 that carries the current ETag", () => {
		for (const name of ["create_twin", "get_twin", "update_twin", "terminate_twin"]) {
			const success = Object.entries(byName(name).responses).find(([status]) => status.startsWith("2"))![1];
			expect(success.headers, name).toHaveProperty("ETag");
		}
		for (const name of ["update_twin", "terminate_twin"]) {
			expect(byName(name).parameters).toContainEqual(
				expect.objectContaining({ name: "if-match", in: "header", description: expect.any(String) }),
			);
			expect(byName(name).responses["412"]).toMatchObject({
				description: expect.stringContaining("412251"),
				headers: { ETag: expect.any(Object) },
			});
		}
		expect(byName("scan_twins").responses["200"].headers).toBeUndefined();
	});

	it("types query parameters as what they mean, not as the text they travel as", () => {
		expect(query("scan_twins", "count").schema).toMatchObject({ type: "integer", minimum: 1, maximum: 1000 });
		expect(query("scan_twins", "details").schema).toMatchObject({ type: "boolean" });
		expect(query("get_twin_ledger_entry_history", "ge").schema).toMatchObject({ type: "number" });
		expect(query("get_twin_doc", "validity_ts").schema).toMatchObject({ type: "number" });
		expect(query("get_twin_ledger_entry", "entries")).toMatchObject({
			style: "form",
			explode: false,
			schema: { type: "array" },
		});
		// No parameter is left untyped by a transform the document cannot see through.
		for (const operation of operations)
			for (const parameter of operation.parameters)
				expect(Object.keys(parameter.schema), `${operation.operationId} ${parameter.name}`).not.toEqual(["default"]);
	});

	it("names shared schemas by meaning", () => {
		const names = Object.keys(document.components.schemas);
		expect(names).toContain("Error");
		expect(names.filter((name) => /^Definition\d*$|^__schema/.test(name))).toEqual([]);
		const refs = JSON.stringify(document).match(/"\$ref":"[^"]+"/g) ?? [];
		for (const ref of refs) expect(names).toContain(ref.slice(8, -1).split("/").at(-1));
	});

	it("answers every error status with the envelope", () => {
		for (const operation of operations) {
			const statuses = Object.keys(operation.responses).filter((status) => Number(status) >= 400);
			expect(statuses).toEqual(expect.arrayContaining(["404", "500"]));
			for (const status of statuses)
				expect(operation.responses[status].content?.["application/json"].schema).toEqual({
					$ref: "#/components/schemas/Error",
				});
		}
	});
});

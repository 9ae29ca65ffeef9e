import { describe, expect, it } from "vitest";
import { routes } from "../../src/router";
import { call } from "../helpers";
import { exports } from "cloudflare:workers";

describe("the API document", () => {
	it("lists every route under its operation name, and nothing else", async () => {
		const res = await call("GET", "/openapi.json");
		expect(res.status).toBe(200);
		const documented: string[] = [];
		for (const [path, methods] of Object.entries(res.body.paths as Record<string, Record<string, { operationId: string }>>)) {
			for (const [method, operation] of Object.entries(methods)) documented.push(`${method.toUpperCase()} ${path} ${operation.operationId}`);
		}
		const routed = routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)/g, "{$1}")} ${r.operation.name}`);
		expect(documented.sort()).toEqual(routed.sort());
	});

	it("describes parameters, bodies, answers, errors and security from the schemas", async () => {
		const { body } = await call("GET", "/openapi.json");
		expect(body.openapi).toBe("3.1.0");
		const scan = body.paths["/twins"].get;
		expect(scan.parameters.map((p: { name: string; required: boolean }) => [p.name, p.required])).toEqual([
			["cursor", false],
			["count", false],
			["match", false],
			["details", false],
		]);
		expect(scan.security).toEqual([{ apiKey: [] }]);
		expect(scan.responses["400"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
		const role = body.paths["/roles"].post;
		expect(role.requestBody.content["application/json"].schema.required).toEqual(["name"]);
		expect(role.responses["201"].content["application/json"].schema.properties.statement).toBeDefined();
		expect(body.paths["/users/{user}/secrets"].delete.parameters).toEqual([
			{ name: "user", in: "path", required: true, schema: expect.objectContaining({ type: "string" }) },
		]);
		expect(body.paths["/notifications/webhooks/{account}"].get.security).toEqual([]);
		expect(body.components.schemas.Error.required).toEqual(["subcode", "trace", "description"]);
	});

	it("serves the reference page and its assets from the Worker", async () => {
		const page = await exports.default.fetch("https://registry.test/docs");
		expect(page.headers.get("content-type")).toContain("text/html");
		const html = await page.text();
		expect(html).toContain("/docs/swagger-ui-bundle.js");
		const script = await exports.default.fetch("https://registry.test/docs/swagger-ui-bundle.js");
		expect(script.status).toBe(200);
		expect((await script.text()).length).toBeGreaterThan(100_000);
		expect((await exports.default.fetch("https://registry.test/docs/swagger-ui.css")).status).toBe(200);
		expect((await exports.default.fetch("https://registry.test/docs", { method: "POST" })).status).toBe(405);
	});
});

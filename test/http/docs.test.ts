import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/http/openapi";
import { routes as table } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";
import { env, exports } from "cloudflare:workers";

const routes = await loadRoutes(table);

// Workers Static Assets answer /openapi.json and /docs before the Worker is invoked;
// exports.default.fetch goes straight to the Worker, so they are fetched through the assets
// binding, which applies the same html handling, _headers and method rules as the platform.
const asset = (path: string, init?: RequestInit) =>
	env.ASSETS.fetch(`https://registry.test${path}`, { redirect: "manual", ...init });

async function apiDocument() {
	const res = await asset("/openapi.json");
	expect(res.status).toBe(200);
	expect(res.headers.get("content-type")).toContain("application/json");
	return (await res.json()) as Record<string, any>;
}

describe("the API document", () => {
	// The file is written before every test run, build, start and deploy (scripts/build/assets.mjs).
	it("is served as built from the route table and its schemas", async () => {
		expect(await (await asset("/openapi.json")).text()).toBe(JSON.stringify(openApiDocument(routes)));
	});

	it("lists every route under its operation name, and nothing else", async () => {
		const body = await apiDocument();
		const documented: string[] = [];
		for (const [path, methods] of Object.entries(
			body.paths as Record<string, Record<string, { operationId: string }>>,
		)) {
			for (const [method, operation] of Object.entries(methods))
				documented.push(`${method.toUpperCase()} ${path} ${operation.operationId}`);
		}
		const routed = routes.map((r) => `${r.method} ${r.path.replace(/:(\w+)\+?/g, "{$1}")} ${r.operation.name}`);
		expect(documented.sort()).toEqual(routed.sort());
	});

	it("describes parameters, bodies, answers, errors and security from the schemas", async () => {
		const body = await apiDocument();
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
		// A record answered by many operations is a named component.
		expect(role.responses["201"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Role" });
		expect(body.components.schemas.Role.properties.statement).toBeDefined();
		expect(body.paths["/users/{user}/secrets"].delete.parameters).toEqual([
			{ name: "user", in: "path", required: true, schema: expect.objectContaining({ type: "string" }) },
		]);
		expect(body.paths["/notifications/webhooks/{account}"].get.security).toEqual([]);
		expect(body.components.schemas.Error.required).toEqual(["subcode", "code", "trace", "description"]);
	});

	it("serves the reference page and its files as static assets, with their security policy", async () => {
		const policy =
			"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";
		const page = await asset("/docs");
		expect(page.status).toBe(200);
		expect(page.headers.get("content-type")).toContain("text/html");
		expect(page.headers.get("content-security-policy")).toBe(policy);
		const html = await page.text();
		expect(html).toContain('<script src="/docs/swagger-ui-bundle.js">');
		expect(html).toContain('<link rel="stylesheet" href="/docs/swagger-ui.css">');
		const script = await asset("/docs/swagger-ui-bundle.js");
		expect(script.status).toBe(200);
		expect(script.headers.get("content-type")).toContain("javascript");
		expect(script.headers.get("content-security-policy")).toBe(policy);
		expect((await script.text()).length).toBeGreaterThan(100_000);
		const css = await asset("/docs/swagger-ui.css");
		expect(css.status).toBe(200);
		expect(css.headers.get("content-type")).toContain("text/css");
		const init = await asset("/docs/init.js");
		expect(await init.text()).toContain('url: "/openapi.json"');
		expect((await asset("/docs", { method: "POST" })).status).toBe(405);
		expect((await asset("/openapi.json", { method: "POST" })).status).toBe(405);
	});

	it("keeps swagger-ui and the document out of the Worker", async () => {
		for (const path of ["/docs/swagger-ui-bundle.js", "/openapi.json"]) {
			const res = await exports.default.fetch(`https://registry.test${path}`);
			expect(res.status).toBe(404);
			expect(((await res.json()) as { subcode: number }).subcode).toBe(404101);
		}
	});
});

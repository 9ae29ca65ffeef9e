import { describe, expect, it } from "vitest";
import { OPERATION_NAMES } from "../../src/policy/names";
import { routes as table } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";

const routes = await loadRoutes(table);

describe("the route table", () => {
	it("routes every operation name exactly once, and nothing else", () => {
		const routed = routes.map((r) => r.operation.name);
		expect([...routed].sort()).toEqual([...OPERATION_NAMES].sort());
		expect(new Set(routes.map((r) => `${r.method} ${r.path}`)).size).toBe(routes.length);
	});
});

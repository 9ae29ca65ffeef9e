import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it } from "vitest";
import { openApiDocument } from "../../src/http/openapi";
import { routes } from "../../src/routes";

// Runs on Node: the validator compiles JSON Schemas to code, which the Workers runtime forbids.
describe("the API document", () => {
	it("is valid OpenAPI 3.1", async () => {
		const validator = new Validator();
		const result = await validator.validate(JSON.parse(JSON.stringify(openApiDocument(routes))));
		expect(result.errors ?? []).toEqual([]);
		expect(result.valid).toBe(true);
		expect(validator.version).toBe("3.1");
	});
});

import * as z from "zod/mini";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/base/errors";
import { validate } from "../../src/base/validation";

// The details a value earns against a schema.
function detailsOf(schema: z.ZodMiniType, value: unknown) {
	try {
		validate(schema, value);
	} catch (error) {
		expect(error).toBeInstanceOf(ApiError);
		return (error as ApiError).details;
	}
	throw new Error("the value was accepted");
}

describe("validation messages", () => {
	const schema = z.strictObject({
		name: z.string(),
		count: z.number(),
		tags: z.array(z.string()),
		settings: z.strictObject({ on: z.boolean() }),
		note: z.nullable(z.string()),
		limit: z.optional(z.union([z.number(), z.boolean()])),
		entries: z.record(z.string().check(z.regex(/^[a-z_]+$/, "Must match ^[a-z_]+$")), z.number()),
	});
	const good = { name: "n", count: 1, tags: [], settings: { on: true }, note: null, entries: {} };

	it("says a missing field is required, and what it takes", () => {
		const { name: _, ...rest } = good;
		expect(detailsOf(schema, rest)).toEqual([{ path: "name", message: "Required: a string" }]);
		const { settings: __, ...other } = good;
		expect(detailsOf(schema, other)).toEqual([{ path: "settings", message: "Required: an object" }]);
	});

	it("names the type expected and the one sent", () => {
		expect(detailsOf(schema, { ...good, count: "1" })).toEqual([
			{ path: "count", message: "Must be a number, not a string" },
		]);
		expect(detailsOf(schema, { ...good, tags: "a" })).toEqual([
			{ path: "tags", message: "Must be a list, not a string" },
		]);
		expect(detailsOf(schema, { ...good, settings: [] })).toEqual([
			{ path: "settings", message: "Must be an object, not a list" },
		]);
		expect(detailsOf(schema, { ...good, note: 3 })).toEqual([
			{ path: "note", message: "Must be a string, not a number" },
		]);
		expect(detailsOf(schema, { ...good, limit: "x" })).toEqual([
			{ path: "limit", message: "Must be a number or a boolean, not a string" },
		]);
	});

	it("names a record's bad key with the pattern it breaks, and an unknown field", () => {
		expect(detailsOf(schema, { ...good, entries: { "Bad-Name": 1 } })).toEqual([
			{ path: "entries.Bad-Name", message: "Must match ^[a-z_]+$" },
		]);
		expect(detailsOf(schema, { ...good, extra: 1 })).toEqual([{ path: "extra", message: "Unknown field" }]);
	});
});

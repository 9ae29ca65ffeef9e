import { describe, expect, it } from "vitest";
import type { Json } from "../../../src/base/json";
import { mergePatch } from "../../../src/base/merge-patch";

describe("mergePatch", () => {
	// RFC 7396, Appendix A: target, patch, result.
	const examples: [Json, Json, Json][] = [
		[{ a: "b" }, { a: "c" }, { a: "c" }],
		[{ a: "b" }, { b: "c" }, { a: "b", b: "c" }],
		[{ a: "b" }, { a: null }, {}],
		[{ a: "b", b: "c" }, { a: null }, { b: "c" }],
		[{ a: ["b"] }, { a: "c" }, { a: "c" }],
		[{ a: "c" }, { a: ["b"] }, { a: ["b"] }],
		[{ a: { b: "c" } }, { a: { b: "d", c: null } }, { a: { b: "d" } }],
		[{ a: [{ b: "c" }] }, { a: [1] }, { a: [1] }],
		[
			["a", "b"],
			["c", "d"],
			["c", "d"],
		],
		[{ a: "b" }, ["c"], ["c"]],
		[{ a: "foo" }, null, null],
		[{ a: "foo" }, "bar", "bar"],
		[{ e: null }, { a: 1 }, { e: null, a: 1 }],
		[[1, 2], { a: "b", c: null }, { a: "b" }],
		[{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
	];

	it.each(examples)("merges %j with %j into %j", (target, patch, result) => {
		expect(mergePatch(target, patch)).toEqual(result);
	});

	it("keeps members in place and adds new ones last, as json_patch does", () => {
		expect(Object.keys(mergePatch({ a: 1, b: 2, c: 3 }, { d: 4, b: 5, a: null }) as object)).toEqual(["b", "c", "d"]);
	});

	it("leaves the target as it was", () => {
		const target = { a: { b: 1 } };
		mergePatch(target, { a: { b: 2 } });
		expect(target).toEqual({ a: { b: 1 } });
	});
});

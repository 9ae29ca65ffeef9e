import { describe, expect, it } from "vitest";
import { jsonBytes, utf8Bytes } from "../../../src/base/json";

describe("sizes in UTF-8 bytes", () => {
	it("counts ASCII one byte a character", () => {
		expect(utf8Bytes("")).toBe(0);
		expect(utf8Bytes('{"a":1,"b":"~\\u007f"}')).toBe(21);
		expect(utf8Bytes("\u007f")).toBe(1);
	});

	it("counts every other character as it encodes", () => {
		for (const text of ["\u0080", "é", "ÿ", "€", "😀", "a😀b€c", "\ud800", `${"x".repeat(1000)}é`]) {
			expect(utf8Bytes(text), text).toBe(new TextEncoder().encode(text).length);
		}
		expect(utf8Bytes("é€😀")).toBe(2 + 3 + 4);
	});

	it("sizes a value as its compact JSON", () => {
		expect(jsonBytes({ name: "é" })).toBe('{"name":"é"}'.length + 1);
	});
});

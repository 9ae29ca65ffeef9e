import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { OPERATION_NAMES } from "../../src/policy/names";
import { ORIGINAL_OPERATION_NAMES, STATEMENT_VOCABULARY } from "../../src/policy/vocabulary";

// The original API's operation names, as its official client names them, kept in the
// repository: the vocabulary is checked against that list, not assumed.
const listing = fileURLToPath(new URL("../../docs/original-operation-names.txt", import.meta.url));

function specifiedNames() {
	return readFileSync(listing, "utf8")
		.split("\n")
		.map((line) => line.trim())
		.filter((line) => line && !line.startsWith("#"));
}

describe("the statement vocabulary", () => {
	it("holds exactly the original API's operation names", () => {
		const names = specifiedNames();
		expect(names.length).toBeGreaterThan(50);
		expect([...ORIGINAL_OPERATION_NAMES].sort()).toEqual([...new Set(names)].sort());
	});

	it("accepts every original name and every name this service routes", () => {
		for (const name of [...specifiedNames(), ...OPERATION_NAMES]) expect(STATEMENT_VOCABULARY).toContain(name);
	});
});

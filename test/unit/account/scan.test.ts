import { describe, expect, it } from "vitest";
import { cutPage, MAX_PAGE_BYTES, planPage } from "../../../src/account/scan";
import type { Caller } from "../../../src/base/caller";
import type { PageRow } from "../../../src/db/twins";

const caller: Caller = {
	account: "a",
	user: "u",
	role: "r",
	statement: { effect: "deny", actions: null },
	rules: { twin: null, entry: null, identity: null },
	description: {},
};
const request = { count: 1000, details: true };
// What the page keeps free for its envelope and cursor (scan.ts).
const ENVELOPE_BYTES = 1024;
const utf8 = (text: string) => new TextEncoder().encode(text).length;

function page(text: string, count: number) {
	const rows: PageRow[] = Array.from({ length: count }, (_, i) => ({
		uuid: `twin-${String(i).padStart(4, "0")}`,
		verdict: 1,
		owner: "a",
		status: "alive",
		description: JSON.stringify({ text }),
		creation_certificate: "{}",
		termination_certificate: null,
		updated_ts: 1,
	}));
	return cutPage(rows, planPage(caller, "", request, 0), caller, request, 0);
}

describe("a scan page's size", () => {
	// Twins of about 30 KB each, in characters of one to four UTF-8 bytes (the last two UTF-16
	// units a character): the page ends at the last twin that keeps it within the limit, as an
	// exact count of the bytes puts it, neither a twin sooner nor later.
	it.each([
		["one", "x"],
		["two", "é"],
		["three", "€"],
		["four", "😀"],
	])("ends where an exact count puts it, in characters of %s bytes", (_, character) => {
		const text = character.repeat(30_000 / utf8(character));
		const { twins, done } = page(text, 200);
		expect(done).toBe(false);
		const used = twins.reduce((sum, twin) => sum + utf8(twin) + 1, ENVELOPE_BYTES);
		expect(used).toBeLessThanOrEqual(MAX_PAGE_BYTES);
		// Every twin's text has the same size: the next one would have passed the limit.
		expect(used + utf8(twins[0]!) + 1).toBeGreaterThan(MAX_PAGE_BYTES);
	});

	it("keeps every twin of a page far from the limit", () => {
		const { twins, done } = page("é".repeat(100), 100);
		expect(twins).toHaveLength(100);
		expect(done).toBe(true);
	});
});

import { describe, expect, it } from "vitest";
import type { Caller } from "../../../src/base/caller";
import type { Entry } from "../../../src/rules/entries";
import {
	type EventBody,
	filterLedgerEvent,
	type LedgerSight,
	readerKey,
	rowScoped,
} from "../../../src/rules/reader-filter";

// The filter of a ledger write's message for a reader whose role has a twin or entry rule: what
// get_twin_ledger_entry showed that reader right after the write, and nothing else.

const FLEET = "11111111-1111-4111-8111-111111111111";
const OTHER = "22222222-2222-4222-8222-222222222222";
const VAN = "33333333-3333-4333-8333-333333333333";

function reader(rules: { twin?: string | null; entry?: string | null }, extra: Partial<Caller> = {}): Caller {
	return {
		account: FLEET,
		user: "driver-1",
		role: "role-driver",
		statement: { effect: "deny", actions: null },
		rules: { twin: rules.twin ?? null, entry: rules.entry ?? null, identity: null },
		description: {},
		dict: null,
		...extra,
	};
}

const entry = (name: string, value: unknown, visibility: string | null = null): Entry => ({
	name,
	value: value as Entry["value"],
	visibility,
	entry_created_ts: 1,
	entry_updated_ts: 2,
	value_changed_ts: 2,
});

const body = (new_value: unknown, old_value: unknown = null): EventBody => ({
	new_value: new_value as EventBody["new_value"],
	old_value: old_value as EventBody["old_value"],
	changed_ts: 2,
});

function sight(
	before: Entry[],
	after: Entry[],
	description: Record<string, unknown> = { driver: "driver-1" },
	ledger = FLEET,
): LedgerSight {
	return {
		twin: { uuid: VAN, owner: FLEET, status: "alive", description: description as LedgerSight["twin"]["description"] },
		ledger,
		before,
		after,
	};
}

describe("filterLedgerEvent", () => {
	const driver = reader({ twin: "TWIN.driver == user" });

	it("keeps the whole event for a reader who sees the twin and every entry, and nothing when the twin is hidden", () => {
		const s = sight([], [entry("mileage", 10), entry("plate", "AB-1")]);
		const event = { mileage: body(10), plate: body("AB-1") };
		expect(filterLedgerEvent(driver, s, "ledger.entry.added", event, 5).event).toEqual(event);
		const theirs = sight([], [entry("mileage", 10)], { driver: "driver-2" });
		expect(filterLedgerEvent(driver, theirs, "ledger.entry.added", { mileage: body(10) }, 5).event).toBeNull();
	});

	it("strips the entries the reader's entry rule hides, and leaves nothing when none is left", () => {
		const confined = reader({ twin: "true", entry: "entry_name != 'cost'" });
		const s = sight([], [entry("mileage", 10), entry("cost", 99)]);
		expect(
			filterLedgerEvent(confined, s, "ledger.entry.added", { mileage: body(10), cost: body(99) }, 5).event,
		).toEqual({ mileage: body(10) });
		expect(filterLedgerEvent(confined, s, "ledger.entry.added", { cost: body(99) }, 5).event).toBeNull();
	});

	it("shows an update only when the reader saw the entry before it too, and a delete as the entry was", () => {
		const confined = reader({ twin: "true", entry: "entry_value != 'classified'" });
		const before = [entry("status", "classified")];
		const after = [entry("status", "open")];
		expect(
			filterLedgerEvent(
				confined,
				sight(before, after),
				"ledger.entry.updated",
				{ status: body("open", "classified") },
				5,
			).event,
		).toBeNull();
		expect(
			filterLedgerEvent(
				confined,
				sight(after, before),
				"ledger.entry.updated",
				{ status: body("classified", "open") },
				5,
			).event,
		).toBeNull();
		const opened = [entry("status", "open")];
		expect(
			filterLedgerEvent(
				confined,
				sight(opened, [entry("status", "closed")]),
				"ledger.entry.updated",
				{ status: body("closed", "open") },
				5,
			).event,
		).toEqual({
			status: body("closed", "open"),
		});
		expect(
			filterLedgerEvent(confined, sight(before, []), "ledger.entry.deleted", { status: body(null, "classified") }, 5)
				.event,
		).toBeNull();
		expect(
			filterLedgerEvent(confined, sight(opened, []), "ledger.entry.deleted", { status: body(null, "open") }, 5).event,
		).toEqual({ status: body(null, "open") });
	});

	it("reads another account's entries through their visibility too, the reader as USER", () => {
		const partner = reader({ twin: "true", entry: "true" }, { account: OTHER, description: { partner: true } });
		const s = sight([], [entry("public", 1, "USER.partner == true"), entry("private", 2)], {}, FLEET);
		expect(filterLedgerEvent(partner, s, "ledger.entry.added", { public: body(1), private: body(2) }, 5).event).toEqual(
			{ public: body(1) },
		);
		const stranger = reader({ twin: "true", entry: "true" }, { account: OTHER, description: {} });
		// A role without an entry rule sees its own account's entries only.
		const own = reader({ twin: "true" }, { account: OTHER, description: { partner: true } });
		expect(filterLedgerEvent(own, s, "ledger.entry.added", { public: body(1) }, 5).event).toBeNull();
		expect(
			filterLedgerEvent(stranger, s, "ledger.entry.added", { public: body(1), private: body(2) }, 5).event,
		).toBeNull();
	});

	it("hides what needs more than a request's work, and says what it spent", () => {
		const group = `(${Array(8).fill("TWIN.s < 'a'").join(" or ")})`;
		const heavy = reader({ twin: Array(5).fill(group).join(" or ") });
		const s = sight([], [entry("a", 1)], { s: "b".repeat(30_000) });
		const { event, units } = filterLedgerEvent(heavy, s, "ledger.entry.added", { a: body(1) }, 5);
		expect(event).toBeNull();
		expect(units).toBeGreaterThan(900_000);
		expect(units).toBeLessThanOrEqual(3 * 1_000_000);
		expect(
			filterLedgerEvent(driver, sight([], [entry("a", 1)]), "ledger.entry.added", { a: body(1) }, 5).units,
		).toBeLessThan(1000);
	});
});

describe("readerKey", () => {
	it("is one for readers whose rules read the same values, whatever else describes them", () => {
		const dispatcher = (depot: string, name: string) =>
			reader({ twin: "TWIN.depot == USER.depot" }, { user: name, description: { depot, name } });
		expect(readerKey(dispatcher("north", "ann"))).toBe(readerKey(dispatcher("north", "bob")));
		expect(readerKey(dispatcher("north", "ann"))).not.toBe(readerKey(dispatcher("south", "ann")));
		const drivers = ["d1", "d2"].map((user) => reader({ twin: "TWIN.driver == user" }, { user }));
		expect(readerKey(drivers[0])).not.toBe(readerKey(drivers[1]));
		// Other rules are another group, even reading the same values.
		expect(readerKey(reader({ twin: "TWIN.driver == user" }, { user: "d1" }))).not.toBe(
			readerKey(reader({ twin: "TWIN.driver != user" }, { user: "d1" })),
		);
	});

	it("reads DICT as it reads USER", () => {
		const withDict = (dict: Record<string, unknown>) =>
			reader({ twin: "TWIN.site == DICT.site" }, { dict: dict as Caller["dict"] });
		expect(readerKey(withDict({ site: "a", x: 1 }))).toBe(readerKey(withDict({ site: "a", x: 2 })));
		expect(readerKey(withDict({ site: "a" }))).not.toBe(readerKey(withDict({ site: "b" })));
	});
});

describe("rowScoped", () => {
	it("is a role with a twin or an entry rule", () => {
		expect(rowScoped(reader({}))).toBe(false);
		expect(rowScoped(reader({ twin: "true" }))).toBe(true);
		expect(rowScoped(reader({ entry: "true" }))).toBe(true);
	});
});

import { describe, expect, it } from "vitest";
import { allowedActions, checkGrant, decide, LATER_OPERATIONS } from "../../../src/policy/statement";

const vocabulary = ["a", "b", "c"];

describe("decide", () => {
	it("allows exactly the listed actions under allow", () => {
		expect(decide({ effect: "allow", actions: ["a"] }, "a")).toEqual({ allowed: true });
		expect(decide({ effect: "allow", actions: ["a"] }, "b")).toEqual({ allowed: false, reason: "not_in_allow_list" });
		expect(decide({ effect: "allow", actions: null }, "a")).toEqual({ allowed: false, reason: "not_in_allow_list" });
	});

	it("allows all but the listed actions under deny; the default allows everything", () => {
		expect(decide({ effect: "deny", actions: ["a"] }, "a")).toEqual({ allowed: false, reason: "in_deny_list" });
		expect(decide({ effect: "deny", actions: ["a"] }, "b")).toEqual({ allowed: true });
		expect(allowedActions({ effect: "deny", actions: null }, vocabulary)).toEqual(vocabulary);
		expect(allowedActions({ effect: "deny", actions: [] }, vocabulary)).toEqual(vocabulary);
		expect(allowedActions({ effect: "allow", actions: [] }, vocabulary)).toEqual([]);
	});
});

describe("checkGrant", () => {
	it("accepts a subset and names what exceeds the caller", () => {
		const caller = { effect: "allow" as const, actions: ["a", "b"] };
		expect(checkGrant(caller, { effect: "allow", actions: ["b"] }, vocabulary)).toEqual({ ok: true });
		expect(checkGrant(caller, { effect: "deny", actions: ["a"] }, vocabulary)).toEqual({
			ok: false,
			reason: "escalation",
			actions: ["c", LATER_OPERATIONS],
		});
		expect(checkGrant({ effect: "deny", actions: null }, { effect: "deny", actions: null }, vocabulary)).toEqual({
			ok: true,
		});
	});

	it("refuses a deny statement from a caller whose allow list names every operation: deny also allows later ones", () => {
		const caller = { effect: "allow" as const, actions: [...vocabulary] };
		expect(checkGrant(caller, { effect: "allow", actions: [...vocabulary] }, vocabulary)).toEqual({ ok: true });
		expect(checkGrant(caller, { effect: "deny", actions: [...vocabulary] }, vocabulary)).toEqual({
			ok: false,
			reason: "escalation",
			actions: [LATER_OPERATIONS],
		});
	});
});

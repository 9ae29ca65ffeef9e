import { describe, expect, it } from "vitest";
import type { Credential } from "../../../src/base/caller";
import {
	claimsOf,
	deriveToken,
	payloadOf,
	lastingAtMost,
	madeUntil,
	MAX_TOKEN_SECONDS,
	mayRefresh,
	tokenExpiry,
} from "../../../src/policy/token";

const secret: Credential = {
	type: "secret",
	binding: { kind: "secret", hash: "h", created_ts: 1000 },
	fingerprint: "abcd",
	validity_ts: null,
};
const token = (options: ("create" | "refresh")[], dict?: Record<string, unknown>): Credential => ({
	...secret,
	type: "token",
	token: { options, exp: 2000, ...(dict ? { dict } : {}) },
});

describe("tokenExpiry", () => {
	it("gives a day when nothing, null or more than a day is asked, and what is asked when shorter", () => {
		expect(tokenExpiry(undefined, 1000, [])).toBe(1000 + MAX_TOKEN_SECONDS);
		expect(tokenExpiry(null, 1000, [])).toBe(1000 + MAX_TOKEN_SECONDS);
		expect(tokenExpiry(1e12, 1000, [])).toBe(1000 + MAX_TOKEN_SECONDS);
		expect(tokenExpiry(1500.1234, 1000, [])).toBe(1500.123);
	});

	it("never outlives a limit: the secret's validity, a parent's expiry", () => {
		expect(tokenExpiry(null, 1000, [1200, null])).toBe(1200);
		expect(tokenExpiry(1500, 1000, [null, 1300, 1400])).toBe(1300);
		expect(tokenExpiry(1100, 1000, [1300])).toBe(1100);
	});
});

describe("deriveToken", () => {
	it("lets a secret make any token", () => {
		expect(deriveToken(secret, { options: ["create", "refresh", "create"], dict: { a: 1 } })).toEqual({
			ok: true,
			options: ["create", "refresh"],
			dict: { a: 1 },
		});
	});

	it("needs the create option on a token", () => {
		expect(deriveToken(token(["refresh"]), { options: [] })).toEqual({ ok: false, refusal: "no_option" });
	});

	it("keeps a child within its parent's options and dictionary", () => {
		const parent = token(["create"], { site: "north" });
		expect(deriveToken(parent, { options: [] })).toEqual({ ok: true, options: [], dict: { site: "north" } });
		expect(deriveToken(parent, { options: ["create"], dict: { site: "north" } })).toEqual({
			ok: true,
			options: ["create"],
			dict: { site: "north" },
		});
		expect(deriveToken(parent, { options: ["refresh"] })).toEqual({ ok: false, refusal: "widens" });
		expect(deriveToken(parent, { options: [], dict: { site: "south" } })).toEqual({ ok: false, refusal: "widens" });
		expect(deriveToken(token(["create"]), { options: [], dict: {} })).toEqual({ ok: false, refusal: "widens" });
	});
});

describe("madeUntil and lastingAtMost", () => {
	it("bound what a token makes by its expiry, and leave what a secret makes as asked", () => {
		expect(madeUntil(token([]))).toBe(2000);
		expect(madeUntil(secret)).toBeNull();
		expect(lastingAtMost(5000, madeUntil(token([])))).toBe(2000);
		expect(lastingAtMost(1500, madeUntil(token([])))).toBe(1500);
		expect(lastingAtMost(5000, madeUntil(secret))).toBe(5000);
	});
});

describe("mayRefresh", () => {
	it("is a token with the refresh option, never a secret", () => {
		expect(mayRefresh(token(["refresh"]))).toBe(true);
		expect(mayRefresh(token(["create"]))).toBe(false);
		expect(mayRefresh(secret)).toBe(false);
	});
});

describe("claimsOf", () => {
	const claims = { sub: "u", acc: "a", sec: "s", iat: 1, exp: 2, opt: ["create"], jti: "j" };
	const read = { sub: "u", acc: "a", basis: { kind: "secret", sec: "s" }, iat: 1, exp: 2, opt: ["create"], jti: "j" };

	it("takes a payload with every claim of its type, and signs what it read as it was", () => {
		expect(claimsOf(claims)).toEqual(read);
		expect(claimsOf({ ...claims, dict: { x: 1 } })).toEqual({ ...read, dict: { x: 1 } });
		expect(payloadOf(claimsOf(claims)!)).toEqual(claims);
	});

	it("tells a token issued for a user and one an exchange gave by their claims", () => {
		const issued = { ...claims, act: { sub: "i" }, tsec: null };
		expect(claimsOf(issued)?.basis).toEqual({ kind: "issued", sec: "s", actor: "i", tsec: null });
		expect(payloadOf(claimsOf(issued)!)).toEqual(issued);
		const { sec: _, ...noSecret } = claims;
		const federated = { ...noSecret, prv: "p", lnk: "l", pvu: 5.5, end: 9 };
		expect(claimsOf(federated)?.basis).toEqual({ kind: "federated", provider: "p", link: "l", pvu: 5.5, end: 9 });
		expect(payloadOf(claimsOf(federated)!)).toEqual(federated);
		// A mix of both, or an actor without the target's secret, is no token of this service.
		for (const broken of [
			{ ...federated, sec: "s" },
			{ ...claims, act: { sub: "i" } },
			{ ...claims, act: "i", tsec: null },
			{ ...noSecret, prv: "p", lnk: "l", pvu: 5.5 },
		]) {
			expect(claimsOf(broken)).toBeUndefined();
		}
	});

	it("refuses a missing or mistyped claim, an unknown option and a dictionary that is no object", () => {
		for (const broken of [
			{ sub: undefined },
			{ exp: "2" },
			{ opt: ["admin"] },
			{ opt: "create" },
			{ dict: [1] },
			{ sec: "" },
		]) {
			expect(claimsOf({ ...claims, ...broken })).toBeUndefined();
		}
	});
});

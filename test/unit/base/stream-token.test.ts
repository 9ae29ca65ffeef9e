import { describe, expect, it } from "vitest";
import { type StreamClaim, signStreamToken, verifyStreamToken } from "../../../src/base/stream-token";

// Stream tokens: signed, read back, and refused when anything in them changes.

const KEY = "a-webhook-key-of-at-least-32-characters";
const claim: StreamClaim = {
	account: crypto.randomUUID(),
	user: crypto.randomUUID(),
	binding: { kind: "secret", created_ts: 1795661407.725 },
	validityMs: 1795662020733,
	dict: null,
};
const HASH = "ab".repeat(32);

describe("stream tokens", () => {
	it("read back as the claim they were signed for, and are URL-safe", async () => {
		const token = (await signStreamToken(KEY, claim))!;
		expect(token).toMatch(/^[0-9a-f-]{36}\.[0-9a-f-]{36}\.\d+\.\d+\.-\.[A-Za-z0-9_-]{43}$/);
		expect(encodeURIComponent(token)).toBe(token);
		expect(await verifyStreamToken(KEY, token)).toEqual(claim);
		// With the dictionary of the request that made it.
		const dict = { site: "north", ü: [1, { deep: null }] };
		const withDict = (await signStreamToken(KEY, { ...claim, dict }))!;
		expect(encodeURIComponent(withDict)).toBe(withDict);
		expect(await verifyStreamToken(KEY, withDict)).toEqual({ ...claim, dict });
	});

	it("carry what a token issued for the user, or given by an exchange, rests on", async () => {
		const bindings: StreamClaim["binding"][] = [
			{ kind: "issued", sec: HASH, actor: crypto.randomUUID(), tsec: null },
			{ kind: "issued", sec: HASH, actor: crypto.randomUUID(), tsec: "cd".repeat(32) },
			{
				kind: "federated",
				provider: crypto.randomUUID(),
				link: crypto.randomUUID(),
				pvu: 1795661400.5,
				end: 1795665000.123,
			},
		];
		for (const binding of bindings) {
			const token = (await signStreamToken(KEY, { ...claim, binding }))!;
			expect(encodeURIComponent(token)).toBe(token);
			expect(await verifyStreamToken(KEY, token)).toEqual({ ...claim, binding });
			// Another binding under the first mac is refused.
			const parts = token.split(".");
			expect(
				await verifyStreamToken(KEY, [...parts.slice(0, 2), "1795661407725", ...parts.slice(3)].join(".")),
			).toBeUndefined();
		}
	});

	it("are refused when a part changes, under another key, or in another shape", async () => {
		const token = (await signStreamToken(KEY, claim))!;
		const parts = token.split(".");
		const changed = [
			[claim.user, ...parts.slice(1)].join("."),
			[parts[0], claim.account, ...parts.slice(2)].join("."),
			[...parts.slice(0, 2), "1795661407726", ...parts.slice(3)].join("."),
			[...parts.slice(0, 3), String(claim.validityMs + 1), ...parts.slice(4)].join("."),
			// Another dictionary, or the absent one claimed, under the first mac.
			[...parts.slice(0, 4), "e30", parts[5]].join("."),
			[...parts.slice(0, 5), `${parts[5][0] === "A" ? "B" : "A"}${parts[5].slice(1)}`].join("."),
		];
		for (const bad of changed) expect(await verifyStreamToken(KEY, bad)).toBeUndefined();
		expect(await verifyStreamToken(`${KEY}!`, token)).toBeUndefined();
		for (const shape of [
			"",
			"a.b.c.d.e.f",
			parts.slice(0, 4).join("."),
			[...parts.slice(0, 4), parts[5]].join("."),
			`${token}.x`,
			token.replace(/\./g, "_"),
		]) {
			expect(await verifyStreamToken(KEY, shape)).toBeUndefined();
		}
	});

	it("cannot be made or read without a key of 32 characters", async () => {
		expect(await signStreamToken(undefined, claim)).toBeUndefined();
		expect(await signStreamToken("short", claim)).toBeUndefined();
		const token = (await signStreamToken(KEY, claim))!;
		expect(await verifyStreamToken(undefined, token)).toBeUndefined();
	});
});

import { describe, expect, it } from "vitest";
import { base64Url } from "../../../src/base/crypto";
import { looksLikeJwt, MAX_TOKEN_LENGTH, signJwt, verifyJwt } from "../../../src/base/jwt";

const KEY = "a-signing-key-of-at-least-32-characters";
const encode = (value: unknown) => base64Url(new TextEncoder().encode(JSON.stringify(value)));

describe("signJwt and verifyJwt", () => {
	it("round-trips a payload under its key, with the one header this service writes", async () => {
		const token = await signJwt(KEY, { sub: "u", n: 1 });
		expect(looksLikeJwt(token)).toBe(true);
		expect(JSON.parse(atob(token.split(".")[0]!))).toEqual({ alg: "HS256", typ: "JWT" });
		expect(await verifyJwt(KEY, token)).toEqual({ sub: "u", n: 1 });
	});

	it("refuses another key, a changed payload or signature, another header, alg none and a long token", async () => {
		const token = await signJwt(KEY, { sub: "u" });
		const [header, payload, signature] = token.split(".") as [string, string, string];
		const forged = [
			await signJwt(`${KEY}!`, { sub: "u" }),
			`${header}.${encode({ sub: "v" })}.${signature}`,
			`${header}.${payload}.${signature.slice(0, -2)}AA`,
			`${encode({ alg: "none", typ: "JWT" })}.${payload}.`,
			`${encode({ alg: "none", typ: "JWT" })}.${payload}.${signature}`,
			`${encode({ typ: "JWT", alg: "HS256" })}.${payload}.${signature}`,
			await signJwt(KEY, { pad: "x".repeat(MAX_TOKEN_LENGTH) }),
			`${header}.${payload}`,
			"not a token",
		];
		for (const text of forged) expect(await verifyJwt(KEY, text)).toBeUndefined();
	});

	it("refuses a signed payload that is not a JSON object", async () => {
		const header = encode({ alg: "HS256", typ: "JWT" });
		for (const payload of [base64Url(new TextEncoder().encode("[1]")), base64Url(new TextEncoder().encode("nope"))]) {
			const key = await crypto.subtle.importKey(
				"raw",
				new TextEncoder().encode(KEY),
				{ name: "HMAC", hash: "SHA-256" },
				false,
				["sign"],
			);
			const signature = new Uint8Array(
				await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${header}.${payload}`)),
			);
			expect(await verifyJwt(KEY, `${header}.${payload}.${base64Url(signature)}`)).toBeUndefined();
		}
	});
});

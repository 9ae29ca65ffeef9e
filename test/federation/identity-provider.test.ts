import { createLocalJWKSet, createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from "jose";
import { describe, expect, it, vi } from "vitest";
import { host, IdentityProvider, notJws } from "./identity-provider";

// The test identity provider and the receiver's JWK Sets themselves: what the other files in
// this folder rely on works, checked with jose as a relying party would, without the service.

describe("the test identity provider", () => {
	it("signs ID tokens with each key type, verifiable against its set inline and from the receiver", async () => {
		const idp = await IdentityProvider.create(["RS256", "ES256", "EdDSA"]);
		await idp.publish();
		const remote = createRemoteJWKSet(new URL(idp.jwksUri));
		const local = createLocalJWKSet(idp.jwks());
		for (const key of idp.keys) {
			const token = await idp.idToken({ sub: `user-${key.alg}` }, { key });
			expect(decodeProtectedHeader(token)).toMatchObject({ alg: key.alg, kid: key.kid });
			for (const keys of [remote, local]) {
				const { payload } = await jwtVerify(token, keys, {
					issuer: idp.issuer,
					audience: idp.audience,
					algorithms: ["RS256", "ES256", "EdDSA"],
				});
				expect(payload).toMatchObject({ sub: `user-${key.alg}`, iss: idp.issuer, aud: idp.audience });
				expect(payload.exp! - payload.iat!).toBe(3600);
			}
		}
		// jose kept the set it fetched once.
		expect(await idp.fetches()).toBe(1);
		// The published keys are public and carry their kid; RSA keys are 2048 bits.
		for (const jwk of idp.jwks().keys) {
			expect(jwk.kid).toEqual(expect.any(String));
			expect(Object.keys(jwk)).not.toContain("d");
		}
		expect(atob(idp.key("RS256").publicJwk.n!.replaceAll("-", "+").replaceAll("_", "/")).length).toBe(256);
	});

	it("rotates: a new key published is found, a dropped one is gone from the set", async () => {
		const idp = await IdentityProvider.create(["ES256"]);
		const old = idp.keys[0]!;
		const added = await idp.addKey("RS256");
		idp.dropKey(old.kid);
		await idp.publish();
		const keys = createRemoteJWKSet(new URL(idp.jwksUri));
		await expect(jwtVerify(await idp.idToken({}, { key: added }), keys)).resolves.toBeTruthy();
		await expect(jwtVerify(await idp.idToken({}, { key: old }), keys)).rejects.toThrow();
	});

	it("makes the forged tokens the verifier must refuse", async () => {
		const idp = await IdentityProvider.create(["RS256"]);
		const keys = createLocalJWKSet(idp.jwks());
		const forged = {
			none: idp.unsigned(),
			hs256: await idp.hmacWithPublicKey(),
			confused: await idp.hmacWithPublicKey({}, "RS256"),
			ps256: await idp.otherRsaAlg("PS256"),
			rs512: await idp.otherRsaAlg("RS512"),
			crit: await idp.withCrit(),
		};
		expect(
			Object.fromEntries(Object.entries(forged).map(([name, token]) => [name, decodeProtectedHeader(token).alg])),
		).toEqual({
			none: "none",
			hs256: "HS256",
			confused: "RS256",
			ps256: "PS256",
			rs512: "RS512",
			crit: "RS256",
		});
		for (const token of Object.values(forged))
			await expect(jwtVerify(token, keys, { algorithms: ["RS256"] })).rejects.toThrow();
		// PS256 and RS512 are real signatures of the provider's key, refused for their algorithm only.
		await expect(jwtVerify(forged.ps256, keys)).resolves.toBeTruthy();
		expect(decodeProtectedHeader(forged.crit).crit).toEqual(["x-test"]);
		for (const text of notJws(idp)) await expect(jwtVerify(text, keys)).rejects.toThrow();
	});

	it("has the receiver answer a status, a redirect or text in place of a set", async () => {
		const id = `jwks-${crypto.randomUUID()}`;
		const url = (name = id) => new URL(`/jwks/${name}`, new IdentityProvider("i", "a").jwksUri);
		expect((await fetch(url())).status).toBe(404);
		await host(id, { status: 500 });
		expect((await fetch(url())).status).toBe(500);
		await host(id, { redirect: true });
		const moved = await fetch(url(), { redirect: "manual" });
		expect([moved.status, moved.headers.get("location")]).toEqual([302, `/jwks/${id}-moved`]);
		await host(id, { text: "not json" });
		expect(await (await fetch(url())).text()).toBe("not json");
	});

	// What test/federation/keys.test.ts relies on to pass jose's 30 s cooldown without waiting:
	// a faked Date reaches jose's cache in this isolate.
	it("lets a faked clock pass jose's cooldown: an unknown kid refetches only once the set is 30 s old", async () => {
		const idp = await IdentityProvider.create(["ES256"]);
		await idp.publish();
		vi.useFakeTimers({ toFake: ["Date"] });
		try {
			const keys = createRemoteJWKSet(new URL(idp.jwksUri), { cacheMaxAge: 600_000, cooldownDuration: 30_000 });
			await jwtVerify(await idp.idToken(), keys);
			const added = await idp.addKey("ES256");
			await idp.publish();
			await expect(jwtVerify(await idp.idToken({}, { key: added }), keys)).rejects.toThrow();
			expect(await idp.fetches()).toBe(1);
			vi.setSystemTime(Date.now() + 31_000);
			await expect(jwtVerify(await idp.idToken({}, { key: added }), keys)).resolves.toBeTruthy();
			expect(await idp.fetches()).toBe(2);
		} finally {
			vi.useRealTimers();
		}
	});
});

import { describe, expect, it, onTestFinished, vi } from "vitest";
import { expectError } from "../support/requests";
import { bootstrap, createUser } from "../support/accounts";
import { received } from "../support/webhooks";
import { addProvider, exchange, federated, link, signIn, updateProvider } from "./helpers";
import { type Alg, IdentityProvider } from "./identity-provider";

// The provider's keys: each key type inline and from its jwks_uri, the fetched set kept per
// provider (one fetch per 30 s for an unknown kid, dropped by an update), rotation, and keys
// that cannot be fetched (503261, Retry-After 30).

function expectUnreachable(res: Awaited<ReturnType<typeof exchange>>) {
	expectError(res, 503, 503261);
	expect(res.headers.get("retry-after")).toBe("30");
}

describe("key types", () => {
	for (const alg of ["RS256", "ES256", "EdDSA"] as Alg[]) {
		for (const remote of [false, true]) {
			it(`verifies ${alg} ${remote ? "from jwks_uri" : "inline"}`, async () => {
				const world = await federated({ algs: [alg], remote });
				expect((await signIn(world)).user).toBe(world.user);
			});
		}
	}

	it("takes a set of all three, each key by its kid", async () => {
		const world = await federated({ algs: ["RS256", "ES256", "EdDSA"], remote: true });
		for (const key of world.idp.keys) {
			const res = await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key }));
			expect([key.alg, res.status]).toEqual([key.alg, 201]);
		}
		expect(await world.idp.fetches()).toBe(1);
	});
});

describe("the fetched set", () => {
	it("is fetched on the first exchange, not at write time, and kept", async () => {
		const world = await federated({ remote: true });
		expect(await world.idp.fetches()).toBe(0);
		await signIn(world);
		await signIn(world);
		expect(await world.idp.fetches()).toBe(1);
		expect((await received(world.idp.id))[0]!.path).toBe(new URL(world.idp.jwksUri).pathname);
	});

	it("is not refetched for an unknown kid within 30 s: 401261, one fetch", async () => {
		const world = await federated({ remote: true });
		await signIn(world);
		const added = await world.idp.addKey("RS256");
		await world.idp.publish();
		expectError(
			await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added })),
			401,
			401261,
		);
		expectError(
			await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added })),
			401,
			401261,
		);
		expect(await world.idp.fetches()).toBe(1);
	});

	it("is refetched for an unknown kid once 30 s old: a key the provider rotated in is found", async () => {
		const world = await federated({ remote: true });
		vi.useFakeTimers({ toFake: ["Date"] });
		onTestFinished(() => void vi.useRealTimers());
		await signIn(world);
		const added = await world.idp.addKey("RS256");
		await world.idp.publish();
		vi.setSystemTime(Date.now() + 31_000);
		const res = await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added }));
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(await world.idp.fetches()).toBe(2);
		// Within the next 30 s another unknown kid fetches nothing more.
		const third = await world.idp.addKey("ES256");
		await world.idp.publish();
		expectError(
			await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: third })),
			401,
			401261,
		);
		expect(await world.idp.fetches()).toBe(2);
	});

	it("is dropped by update_identity_provider: the next exchange fetches the set again", async () => {
		const world = await federated({ remote: true });
		await signIn(world);
		const added = await world.idp.addKey("RS256");
		await world.idp.publish();
		expect((await updateProvider(world.admin, world.provider.uuid, { clock_skew: 30 })).status).toBe(200);
		const res = await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added }));
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(await world.idp.fetches()).toBe(2);
	});

	it("is kept per provider: two accounts trusting one jwks_uri fetch it once each", async () => {
		const first = await federated({ remote: true });
		const admin = await bootstrap();
		const provider = await addProvider(admin, first.idp, {}, true);
		await link(admin.secret, await createUser(admin), provider.uuid, first.subject);
		await signIn(first);
		await signIn({ admin, idp: first.idp, subject: first.subject });
		await signIn({ admin, idp: first.idp, subject: first.subject });
		expect(await first.idp.fetches()).toBe(2);
	});
});

describe("rotation of inline keys", () => {
	it("takes a key added by update, and refuses one dropped by update (401261)", async () => {
		const world = await federated({ algs: ["RS256"] });
		const old = world.idp.keys[0]!;
		const added = await world.idp.addKey("EdDSA");
		const withBoth = await updateProvider(world.admin, world.provider.uuid, {
			jwks: world.idp.jwks(),
			algorithms: ["RS256", "EdDSA"],
		});
		expect(withBoth.status, JSON.stringify(withBoth.body)).toBe(200);
		expect(
			(await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added }))).status,
		).toBe(201);
		const oldToken = await world.idp.idToken({ sub: world.subject }, { key: old });
		expect((await exchange(world.admin.account, oldToken)).status).toBe(201);
		world.idp.dropKey(old.kid);
		expect((await updateProvider(world.admin, world.provider.uuid, { jwks: world.idp.jwks() })).status).toBe(200);
		expectError(await exchange(world.admin.account, oldToken), 401, 401261);
		expect(
			(await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject }, { key: added }))).status,
		).toBe(201);
	});
});

describe("keys that cannot be fetched (503261)", () => {
	for (const [what, hosted] of [
		["a 500", { status: 500 }],
		["a 404", { status: 404 }],
		["a redirect", { redirect: true }],
		["not JSON", { text: "<html>keys</html>" }],
		["not a JWK Set", { text: JSON.stringify({ keys: "none" }) }],
	] as const) {
		it(`answers 503261 with Retry-After 30 for ${what}`, async () => {
			const world = await federated({ remote: true });
			await world.idp.serve(hosted);
			expectUnreachable(await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject })));
			expect(await world.idp.fetches()).toBeGreaterThanOrEqual(1);
		});
	}

	it("answers 503261 for more than 50 keys", async () => {
		const world = await federated({ remote: true });
		const extra = await IdentityProvider.create(Array.from({ length: 50 }, () => "ES256" as Alg));
		await world.idp.serve({ jwks: { keys: [...world.idp.jwks().keys, ...extra.jwks().keys] } });
		expectUnreachable(await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject })));
	});

	it("fetches nothing for a token the provider does not match: 401261 first", async () => {
		const world = await federated({ remote: true });
		await world.idp.serve({ status: 500 });
		expectError(
			await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject, aud: "another-client" })),
			401,
			401261,
		);
		expectError(await exchange(world.admin.account, world.idp.unsigned({ sub: world.subject })), 401, 401262);
		expect(await world.idp.fetches()).toBe(0);
	});

	it("signs in again once the keys are back", async () => {
		const world = await federated({ remote: true });
		await world.idp.serve({ status: 500 });
		expectUnreachable(await exchange(world.admin.account, await world.idp.idToken({ sub: world.subject })));
		await world.idp.publish();
		// A failed fetch is not kept as a set: the next exchange may fetch again, at the latest after the cooldown.
		vi.useFakeTimers({ toFake: ["Date"] });
		onTestFinished(() => void vi.useRealTimers());
		vi.setSystemTime(Date.now() + 31_000);
		expect((await signIn(world)).user).toBe(world.user);
	});
});

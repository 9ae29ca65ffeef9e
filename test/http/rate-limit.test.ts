import { describe, expect, it } from "vitest";
import { clientKey } from "../../src/http/rate-limit";
import { bootstrap, call, createUser, expectError, randomAddress } from "../helpers";

// Both limits allow 30 attempts a minute per client address (wrangler.toml [[ratelimits]]).
const LIMIT = 30;

async function attempts(n: number, send: () => Promise<Awaited<ReturnType<typeof call>>>) {
	const statuses: number[] = [];
	for (let i = 0; i < n; i++) statuses.push((await send()).status);
	return statuses;
}

function expectLimited(res: Awaited<ReturnType<typeof call>>) {
	expectError(res, 429, 429101);
	expect(res.headers.get("retry-after")).toBe("60");
}

describe("rate limits per client address", () => {
	it("PIN redemption: wrong PINs are 404 up to the limit, then 429; other addresses are unaffected", async () => {
		const admin = await bootstrap();
		const from = randomAddress();
		const guess = (address: string) => call("POST", `/secrets/${admin.account}/AAAAAAAAAA`, { headers: { "cf-connecting-ip": address } });
		expect(new Set(await attempts(LIMIT, () => guess(from)))).toEqual(new Set([404]));
		expectLimited(await guess(from));
		expectError(await guess(randomAddress()), 404, 404103);

		// A real PIN still works from another address, but not from the limited one.
		const user = await createUser(admin);
		const pin = (await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: {} })).body.pin;
		expectLimited(await call("POST", `/secrets/${admin.account}/${pin}`, { headers: { "cf-connecting-ip": from } }));
		expect((await call("POST", `/secrets/${admin.account}/${pin}`)).status).toBe(201);
	});

	it("webhook token routes share one limit per address", async () => {
		const admin = await bootstrap();
		const from = randomAddress();
		const path = `/notifications/webhooks/${admin.account}?token=nope`;
		const headers = { "cf-connecting-ip": from };
		const methods = ["GET", "PATCH", "DELETE"];
		let i = 0;
		const statuses = await attempts(LIMIT, () => {
			const method = methods[i++ % 3];
			return call(method, path, { headers, body: method === "PATCH" ? {} : undefined });
		});
		expect(new Set(statuses)).toEqual(new Set([404]));
		expectLimited(await call("GET", path, { headers }));
	});

	it("failed authentication: 401 up to the limit, then 429; a valid secret still answers", async () => {
		const admin = await bootstrap();
		const headers = { "cf-connecting-ip": randomAddress() };
		const wrong = "x".repeat(64);
		expect(new Set(await attempts(LIMIT, () => call("GET", "/whoami", { secret: wrong, headers })))).toEqual(new Set([401]));
		expectLimited(await call("GET", "/whoami", { secret: wrong, headers }));
		expectLimited(await call("GET", "/whoami", { headers }));
		expect((await call("GET", "/whoami", { secret: admin.secret, headers })).status).toBe(200);
	});

	it("keys IPv6 clients by their /64", () => {
		const key = (address: string) => clientKey(new Request("https://x/", { headers: { "cf-connecting-ip": address } }));
		expect(key("2001:db8:1:2::1")).toBe(key("2001:db8:1:2:ffff::9"));
		expect(key("2001:db8:1:2::1")).not.toBe(key("2001:db8:1:3::1"));
		expect(key("203.0.113.7")).toBe("203.0.113.7");
		expect(key("")).toBe("unknown");
	});
});

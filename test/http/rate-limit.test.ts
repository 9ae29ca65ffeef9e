import { describe, expect, it } from "vitest";
import { call, expectError, randomAddress } from "../support/requests";
import { bootstrap, createUser } from "../support/accounts";

// Both limits allow 30 attempts a minute per client address (wrangler.toml [[ratelimits]]).
const LIMIT = 30;

type Answer = Awaited<ReturnType<typeof call>>;

function expectLimited(res: Answer) {
	expectError(res, 429, 429101);
	expect(res.headers.get("retry-after")).toBe("60");
}

// Sends until the first 429 and checks that the answers before it have the expected status
// and number. The limiter's windows are fixed minutes of the wall clock, so a run of attempts
// that crosses into the next minute gets up to a second allowance (the limit, at most twice)
// before it is refused; it is refused all the same.
async function expectLimitAfterAllowance(expected: number, send: () => Promise<Answer>) {
	const before: number[] = [];
	for (let i = 0; i <= 2 * LIMIT; i++) {
		const res = await send();
		if (res.status === 429) {
			expectLimited(res);
			expect(before.length).toBeGreaterThanOrEqual(LIMIT);
			expect(new Set(before)).toEqual(new Set([expected]));
			return;
		}
		before.push(res.status);
	}
	expect.fail(`no 429 after ${before.length} attempts`);
}

describe("rate limits per client address", () => {
	it("PIN redemption: wrong PINs are 404 up to the limit, then 429; other addresses are unaffected", async () => {
		const admin = await bootstrap();
		const from = randomAddress();
		const guess = (address: string) =>
			call("POST", `/secrets/${admin.account}/AAAAAAAAAA`, { headers: { "cf-connecting-ip": address } });
		// The real PIN is issued first: tried right after the 429, it meets the same minute's count.
		const user = await createUser(admin);
		const pin = (await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: {} })).body.pin;
		await expectLimitAfterAllowance(404, () => guess(from));

		// A real PIN is refused from the limited address, and still works from another one.
		expectLimited(await call("POST", `/secrets/${admin.account}/${pin}`, { headers: { "cf-connecting-ip": from } }));
		expectError(await guess(randomAddress()), 404, 404103);
		expect((await call("POST", `/secrets/${admin.account}/${pin}`)).status).toBe(201);
	});

	it("webhook token routes share one limit per address", async () => {
		const admin = await bootstrap();
		const from = randomAddress();
		const path = `/notifications/webhooks/${admin.account}?token=nope`;
		const headers = { "cf-connecting-ip": from };
		const methods = ["GET", "PATCH", "DELETE"];
		let i = 0;
		await expectLimitAfterAllowance(404, () => {
			const method = methods[i++ % 3];
			return call(method, path, { headers, body: method === "PATCH" ? {} : undefined });
		});
		expectLimited(await call("GET", path, { headers }));
	});

	it("failed authentication: 401 up to the limit, then 429; a valid secret still answers", async () => {
		const admin = await bootstrap();
		const headers = { "cf-connecting-ip": randomAddress() };
		const wrong = "x".repeat(64);
		await expectLimitAfterAllowance(401, () => call("GET", "/whoami", { secret: wrong, headers }));
		expectLimited(await call("GET", "/whoami", { headers }));
		expect((await call("GET", "/whoami", { secret: admin.secret, headers })).status).toBe(200);
	});
});

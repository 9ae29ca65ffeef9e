import { describe, expect, it } from "vitest";
import { expectError, randomAddress } from "../support/requests";
import { exchange, federated } from "./helpers";

// Every exchange answered 401 spends an attempt of its client address (30 a minute, shared with
// failed authentications); the refusal ends that address's exchanges for a minute, valid ones
// too, without telling it anything more.

const LIMIT = 30;

describe("the exchange's rate limit per client address", () => {
	it("answers 429101 after 30 refused exchanges, then refuses even a valid one from that address", async () => {
		const world = await federated();
		const headers = { "cf-connecting-ip": randomAddress() };
		const valid = await world.idp.idToken({ sub: world.subject });
		const wrongIssuer = await world.idp.idToken({ sub: world.subject, iss: "https://nobody.example.com/" });
		const unsigned = world.idp.unsigned({ sub: world.subject });
		const statuses: number[] = [];
		// The limiter's windows are minutes of the wall clock: a run that crosses into the next one
		// gets a second allowance at most.
		let last: Awaited<ReturnType<typeof exchange>> | undefined;
		while (statuses.at(-1) !== 429 && statuses.length <= 2 * LIMIT + 1) {
			// 401261 and 401262 alike spend attempts.
			last = await exchange(world.admin.account, statuses.length % 2 ? unsigned : wrongIssuer, {}, headers);
			statuses.push(last.status);
		}
		expect(statuses.at(-1)).toBe(429);
		expectError(last!, 429, 429101);
		expect(Number(last!.headers.get("retry-after"))).toBeGreaterThan(0);
		expect(statuses.length).toBeGreaterThan(LIMIT);
		expect(new Set(statuses.slice(0, -1))).toEqual(new Set([401]));

		// For the next minute the address's exchanges are refused before anything is read.
		const blocked = await exchange(world.admin.account, valid, {}, headers);
		expectError(blocked, 429, 429101);
		const retry = Number(blocked.headers.get("retry-after"));
		expect(retry).toBeGreaterThan(0);
		expect(retry).toBeLessThanOrEqual(60);
		expectError(await exchange(world.admin.account, "not even a token", { unknown: 1 }, headers), 429, 429101);
		// Another address signs in.
		expect((await exchange(world.admin.account, valid)).status).toBe(201);
	});

	it("does not spend attempts on exchanges that succeed", async () => {
		const world = await federated();
		const headers = { "cf-connecting-ip": randomAddress() };
		const valid = await world.idp.idToken({ sub: world.subject });
		for (let i = 0; i < LIMIT + 5; i++) {
			const res = await exchange(world.admin.account, valid, {}, headers);
			expect([i, res.status]).toEqual([i, 201]);
		}
	});
});

import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { until } from "../support/waiting";
import { storedUsage, usageOf, usageTotal } from "./helpers";

// How counts travel (docs/usage.md "How it is kept"): an isolate keeps them and hands them to the account's object when
// USAGE_FLUSH_SECONDS have passed since the first of them (half a second in the tests), or
// earlier with a usage read of the account. Nothing the platform runs after a response can be
// awaited, so the tests watch the object's storage until the counts arrive.

const restCount = (rows: Record<string, number>[]) => rows.reduce((total, row) => total + row.rest_count!, 0);

describe("the flush", () => {
	it("brings counts to the object without any usage read, once", async () => {
		const admin = await bootstrap();
		for (let i = 0; i < 5; i++) expect((await call("GET", "/whoami", { secret: admin.secret })).status).toBe(200);
		await until(
			() => storedUsage(admin.account, admin.user),
			(rows) => restCount(rows) === 5,
			"the counts to reach the object",
		);
		// Past another flush: nothing arrives twice.
		await new Promise((resolve) => setTimeout(resolve, 1500));
		expect(restCount(await storedUsage(admin.account, admin.user))).toBe(5);
		expect(restCount(await storedUsage(admin.account, null))).toBe(5);
		expect(usageTotal(await usageOf(admin.secret)).rest_count).toBe(5);
	});

	it("is overtaken by a usage read, which hands the isolate's counts over itself, and sends nothing twice", async () => {
		const admin = await bootstrap();
		// A longer flush for this account: the read must come first.
		const slow = { USAGE_FLUSH_SECONDS: 3 };
		for (let i = 0; i < 3; i++)
			expect((await call("GET", "/whoami", { secret: admin.secret, env: slow })).status).toBe(200);
		expect(await storedUsage(admin.account, admin.user)).toEqual([]);
		const read = await call("GET", "/usage", { secret: admin.secret, env: slow });
		expect(usageTotal(read.body.usage).rest_count).toBe(3);
		expect(restCount(await storedUsage(admin.account, admin.user))).toBe(3);
		// The timer the first request started carries the read itself, and only it.
		await until(
			() => storedUsage(admin.account, admin.user),
			(rows) => restCount(rows) === 4,
			"the read's own count",
			10_000,
		);
		await new Promise((resolve) => setTimeout(resolve, 1000));
		expect(restCount(await storedUsage(admin.account, admin.user))).toBe(4);
	});

	it("starts one timer per account: a burst reaches the object in one call", async () => {
		const admin = await bootstrap();
		const slow = { USAGE_FLUSH_SECONDS: 1 };
		const first = Date.now();
		await Promise.all(Array.from({ length: 10 }, () => call("GET", "/whoami", { secret: admin.secret, env: slow })));
		const rows = await until(
			() => storedUsage(admin.account, admin.user),
			(found) => restCount(found) > 0,
			"the burst to arrive",
			10_000,
		);
		// All at once, a second after the first request, not one by one.
		expect(restCount(rows)).toBe(10);
		expect(Date.now() - first).toBeGreaterThanOrEqual(900);
	});
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bucketKey, fullCounts, hourOf, USAGE_FIELDS } from "../../src/base/usage";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, createUser, userWith } from "../support/accounts";
import { inImplementation } from "../support/objects";
import { addStoredUsage, storedUsage, usageOf } from "./helpers";

// The query of get_account_usage and get_user_usage (docs/usage.md "Reading it"): ge and le, hour and day buckets and
// their keys, the bounds, and who may be asked about.

const HOUR = 3600;
const DAY = 86_400;

describe("the answer", () => {
	it("is the current and previous hour by default, every field in the table's order", async () => {
		const admin = await bootstrap();
		await call("GET", "/whoami", { secret: admin.secret });
		const before = hourOf(Date.now() / 1000);
		const usage = await usageOf(admin.secret, `/usage/${admin.user}`);
		const keys = Object.keys(usage);
		expect(keys.length).toBeGreaterThanOrEqual(1);
		for (const key of keys) {
			expect(key).toMatch(/^\d{4}-\d{2}-\d{2}-\d{2}$/);
			expect([bucketKey(before - 1, "hour"), bucketKey(before, "hour"), bucketKey(before + 1, "hour")]).toContain(key);
			expect(Object.keys(usage[key]!)).toEqual([...USAGE_FIELDS]);
		}
		const days = await usageOf(admin.secret, "/usage?bucket=day");
		for (const key of Object.keys(days)) expect(key).toMatch(/^\d{4}-\d{2}-\d{2}$/);
		expect(Object.values(days).reduce((n, bucket) => n + bucket.rest_count, 0)).toBeGreaterThanOrEqual(2);
	});

	it("holds the hours ge and le fall in and those between, ascending; a day sums those of its hours", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		// Days ago, away from the requests the test makes now.
		const base = hourOf(Date.now() / 1000) - 10 * 24 - (hourOf(Date.now() / 1000) % 24);
		await addStoredUsage(admin.account, [
			{ user, hour: base + 30, counts: { rest_count: 5 } },
			{ user, hour: base, counts: { rest_count: 1, db_read_cost: 10 } },
			{ user, hour: base + 1, counts: { rest_count: 2 } },
			{ user: null, hour: base + 1, counts: { task_publish_topic_count: 3, ledger_size_delta: -4 } },
			{ user, hour: base + 5, counts: { twins_created: 1 } },
		]);
		const query = (ge: number, le: number, bucket = "hour") => `ge=${ge}&le=${le}&bucket=${bucket}`;
		const key = (hour: number) => bucketKey(hour, "hour");

		// ge in the middle of an hour takes that hour; le on an hour's first second takes it too.
		const mine = await usageOf(admin.secret, `/usage/${user}?${query(base * HOUR + 1800, (base + 5) * HOUR)}`);
		expect(mine).toEqual({
			[key(base)]: fullCounts({ rest_count: 1, db_read_cost: 10 }),
			[key(base + 1)]: fullCounts({ rest_count: 2 }),
			[key(base + 5)]: fullCounts({ twins_created: 1 }),
		});
		expect(Object.keys(mine)).toEqual([key(base), key(base + 1), key(base + 5)]);
		const later = await usageOf(admin.secret, `/usage/${user}?${query((base + 1) * HOUR, (base + 5) * HOUR - 0.001)}`);
		expect(Object.keys(later)).toEqual([key(base + 1)]);

		// The account's hour holds its users' counts and its own.
		const account = await usageOf(admin.secret, `/usage?${query((base + 1) * HOUR, (base + 1) * HOUR)}`);
		expect(account).toEqual({
			[key(base + 1)]: fullCounts({ rest_count: 2, ledger_size_delta: -4, task_publish_topic_count: 3 }),
		});

		// base is a day's first hour: base + 30 is the next day.
		const days = await usageOf(admin.secret, `/usage/${user}?${query(base * HOUR, (base + 30) * HOUR, "day")}`);
		expect(days).toEqual({
			[bucketKey(base, "day")]: fullCounts({ rest_count: 3, db_read_cost: 10, twins_created: 1 }),
			[bucketKey(base + 30, "day")]: fullCounts({ rest_count: 5 }),
		});
		// Only the hours asked for: the day's other hours are not summed in.
		const partial = await usageOf(admin.secret, `/usage/${user}?${query((base + 1) * HOUR, (base + 2) * HOUR, "day")}`);
		expect(partial).toEqual({ [bucketKey(base, "day")]: fullCounts({ rest_count: 2 }) });

		// Nothing counted: no bucket.
		expect(await usageOf(admin.secret, `/usage/${user}?${query((base + 2) * HOUR, (base + 4) * HOUR)}`)).toEqual({});
	});

	it("keeps 90 days: older hours go, and none older is added", async () => {
		const admin = await bootstrap();
		const now = hourOf(Date.now() / 1000);
		const stub = env.ACCOUNTS.getByName(admin.account);
		await addStoredUsage(admin.account, [
			{ user: admin.user, hour: now - 89 * 24, counts: { rest_count: 1 } },
			{ user: admin.user, hour: now - 91 * 24, counts: { rest_count: 1 } },
		]);
		expect((await storedUsage(admin.account, admin.user)).map((row) => row.hour)).toEqual([now - 89 * 24]);
		// An hour that was kept until it grew old: written as it was, with the object's pruning
		// of this hour forgotten, as in the next hour.
		await inImplementation(stub, (instance, state) => {
			state.storage.sql.exec(
				"INSERT INTO usage (subject, hour, rest_count) VALUES (?, ?, 1)",
				admin.user,
				now - 92 * 24,
			);
			(instance as unknown as { usage: { pruned: number } }).usage.pruned = -1;
		});
		await addStoredUsage(admin.account, [{ user: admin.user, hour: now, counts: { rest_count: 1 } }]);
		expect((await storedUsage(admin.account, admin.user)).map((row) => row.hour)).toEqual([now - 89 * 24, now]);
	});
});

describe("the query", () => {
	it("takes ge and le up to 31 days apart, le alone, and ge alone up to now", async () => {
		const admin = await bootstrap();
		const at = Math.floor(Date.now() / 1000);
		for (const query of [
			`ge=${at - 31 * DAY}&le=${at}`,
			`le=${at - 40 * DAY}`,
			`ge=${at - 30 * DAY}`,
			`ge=${at}&le=${at}`,
			"ge=1.5&le=2",
			"bucket=day&le=1000",
		]) {
			const res = await call("GET", `/usage?${query}`, { secret: admin.secret });
			expect([query, res.status]).toEqual([query, 200]);
		}
	});

	it("refuses ge after le, more than 31 days, bad numbers, another bucket and unknown parameters: 400101", async () => {
		const admin = await bootstrap();
		const at = Math.floor(Date.now() / 1000);
		const bad = [
			`ge=${at}&le=${at - 1}`,
			`ge=${at - 31 * DAY - 1}&le=${at}`,
			`ge=${at - 32 * DAY}`,
			`le=${at - 3599}&ge=${at}`,
			"ge=abc",
			"ge=",
			"le=-1",
			"le=1e9",
			"ge=0x10",
			"le=Infinity",
			"bucket=week",
			"bucket=HOUR",
			"bucket=",
			"limit=10",
			"user=x",
		];
		for (const query of bad) {
			for (const path of ["/usage", `/usage/${admin.user}`]) {
				const res = await call("GET", `${path}?${query}`, { secret: admin.secret });
				expect([query, res.status, res.body.subcode]).toEqual([query, 400, 400101]);
			}
		}
		expectError(await call("GET", "/usage/not-a-uuid", { secret: admin.secret }), 400, 400101);
	});
});

describe("who may be asked about", () => {
	it("answers another account's user exactly as an unknown one: 404102, headers included", async () => {
		const first = await bootstrap();
		const second = await bootstrap();
		const stranger = crypto.randomUUID();
		for (const query of ["", "?bucket=day"]) {
			const foreign = await call("GET", `/usage/${first.user}${query}`, { secret: second.secret });
			const absent = await call("GET", `/usage/${stranger}${query}`, { secret: second.secret });
			expectError(foreign, 404, 404102);
			expect(fingerprint(foreign, (text) => text.replaceAll(first.user, stranger))).toEqual(fingerprint(absent));
		}
		// Whatever the query: the user is looked for first.
		expectError(await call("GET", `/usage/${first.user}?bucket=week`, { secret: second.secret }), 404, 404102);
	});

	it("answers a deleted user as an unknown one, and needs the statement to allow the operation", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		expect((await call("DELETE", `/users/${user}`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", `/usage/${user}`, { secret: admin.secret }), 404, 404102);
		const reader = await userWith(admin, { effect: "allow", actions: ["get_user_usage"] });
		expect((await call("GET", `/usage/${reader.user}`, { secret: reader.secret })).status).toBe(200);
		expectError(await call("GET", "/usage", { secret: reader.secret }), 403, 403101);
	});
});

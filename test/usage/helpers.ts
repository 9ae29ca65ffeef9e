// What the usage tests share: the usage answer and its total, a tally of what a test's own
// requests should count, and the hourly rows the account's object holds, read or added directly.
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { USAGE_FIELDS, type UsageField, type UsageRow } from "../../src/base/usage";
import { inImplementation } from "../support/objects";
import { call, d1Cost } from "../support/requests";

export type UsageBuckets = Record<string, Record<UsageField, number>>;

// The usage answer of `path` (/usage or /usage/{user}, with its query), read by `secret`.
export async function usageOf(secret: string, path = "/usage"): Promise<UsageBuckets> {
	const res = await call("GET", path, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.usage;
}

// Every bucket's counts added up, field by field.
export function usageTotal(buckets: UsageBuckets): Record<UsageField, number> {
	const total = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
	for (const bucket of Object.values(buckets)) for (const field of USAGE_FIELDS) total[field] += bucket[field];
	return total;
}

// What a test expects usage to count: `call` for a user's requests, each one tallied under
// its credential with the figures of its Server-Timing, as the Worker counts them.
export function usageTally() {
	const tallies = new Map<string, Record<UsageField, number>>();
	const of = (secret: string) => {
		let tally = tallies.get(secret);
		if (!tally) {
			tally = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
			tallies.set(secret, tally);
		}
		return tally;
	};
	return {
		async call(method: string, path: string, options: Parameters<typeof call>[2] & { secret: string }) {
			const res = await call(method, path, options);
			const tally = of(options.secret);
			tally.rest_count += 1;
			tally.db_read_cost += d1Cost(res, "rows_read");
			tally.db_write_cost += d1Cost(res, "rows_written");
			if (method === "POST" && path === "/twins" && res.status === 201) tally.twins_created += 1;
			if (method === "DELETE" && /^\/twins\/[^/]+$/.test(path) && res.status === 200) tally.twins_terminated += 1;
			return res;
		},
		// The tally of some credentials together (one user's secret and tokens, or an account's users).
		of(...secrets: string[]) {
			const sum = Object.fromEntries(USAGE_FIELDS.map((field) => [field, 0])) as Record<UsageField, number>;
			for (const secret of secrets) for (const field of USAGE_FIELDS) sum[field] += of(secret)[field];
			return sum;
		},
	};
}

// The hourly rows the account's object holds for a user (null: the account), read from its
// storage directly: what has arrived, without a usage read handing anything over.
export function storedUsage(account: string, user: string | null) {
	// Through the implementation: building it makes the object's tables, as its first call would.
	return inImplementation(env.ACCOUNTS.getByName(account), (_instance, state) =>
		state.storage.sql
			.exec<Record<string, number>>("SELECT * FROM usage WHERE subject = ? ORDER BY hour", user ?? "")
			.toArray(),
	);
}

// Hourly rows put into the account's object as an isolate's flush would (hours of the past).
export function addStoredUsage(account: string, rows: UsageRow[]) {
	return env.ACCOUNTS.getByName(account).addUsage(rows);
}

import { UsageBuffer } from "../base/usage-buffer";
import { hourOf, requestCounts, type UsageCounts, type UsageRow } from "../base/usage";
import type { D1Meter } from "../db/meter";
import type { OperationName } from "../policy/names";
import { now } from "../base/time";

// The Worker's side of usage counting: counts wait in this isolate's buffer and reach the
// account's object in one call per flush, after the response, so a request spends no D1 query
// and no time on them. The flush takes the counts out of the buffer before it sends them: an
// isolate evicted meanwhile, or a failed call, loses them; none is ever sent twice.
const buffer = new UsageBuffer();

// When USAGE_FLUSH_SECONDS is unset or not a number.
const DEFAULT_FLUSH_SECONDS = 10;
// The runtime keeps work a response handed to waitUntil for 30 seconds after it: a longer
// timer would be cut off with its counts.
const MAX_FLUSH_SECONDS = 25;

type Runtime = { env: Env; waitUntil(promise: Promise<unknown>): void };

export function countUsage(
	{ env, waitUntil }: Runtime,
	account: string,
	user: string | null,
	counts: UsageCounts,
	at = now(),
) {
	if (buffer.add(account, user, hourOf(at), counts)) waitUntil(flushLater(env, account));
}

// A request of a user (or a batch's line, run as its creator's call) counts in its account's
// usage with what its meter reports, whatever its answer.
export function countRequest(
	runtime: Runtime,
	counted: { account: string; user: string; operation: OperationName },
	status: number,
	meter: D1Meter,
) {
	countUsage(runtime, counted.account, counted.user, requestCounts(counted.operation, status, meter));
}

// What this isolate holds for the account, taken for a usage read to hand over with it.
export function pendingUsage(account: string): UsageRow[] {
	return buffer.take(account);
}

function flushSeconds(env: Env): number {
	const seconds = Number(env.USAGE_FLUSH_SECONDS);
	return Number.isFinite(seconds) && seconds >= 0 ? Math.min(seconds, MAX_FLUSH_SECONDS) : DEFAULT_FLUSH_SECONDS;
}

async function flushLater(env: Env, account: string) {
	await new Promise((resolve) => setTimeout(resolve, flushSeconds(env) * 1000));
	const rows = buffer.take(account, true);
	if (rows.length === 0) return;
	try {
		await env.ACCOUNTS.getByName(account).addUsage(rows);
	} catch (error) {
		console.error(JSON.stringify({ usage: account, lost: rows.length, error: String(error) }));
	}
}

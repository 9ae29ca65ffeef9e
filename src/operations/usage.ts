import * as z from "zod/mini";
import { findUser } from "../db/users";
import { accountClient } from "../account/client";
import { pendingUsage } from "../account/usage-client";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { hourOf, USAGE_FIELDS, type UsageField } from "../base/usage";
import type { Caller } from "../base/caller";
import { type Context, defineOperation } from "./operation";
import { mapOf, queryTimestamp, uuid } from "./schemas";
import { dbOf } from "../db/client";

// At most 31 days between ge and le: 31 × 24 hours, and one more when neither falls on the hour.
const MAX_RANGE_SECONDS = 31 * 86_400;
const MAX_BUCKETS = 31 * 24 + 1;
// Without ge, the hour before le: the current and the previous hour by default.
const DEFAULT_SPAN_SECONDS = 3600;

const usageQuery = z.strictObject({
	ge: z.optional(queryTimestamp),
	le: z.optional(queryTimestamp),
	bucket: z._default(z.optional(z.enum(["hour", "day"], { error: "Must be hour or day" })), "hour"),
});

const bucketOut = z.object(
	Object.fromEntries(USAGE_FIELDS.map((field) => [field, z.number()])) as Record<UsageField, z.ZodMiniNumber>,
);

const usageAnswer = z.object({
	// By bucket key (`YYYY-MM-DD-HH` or `YYYY-MM-DD`, UTC), ascending; buckets where nothing
	// was counted are left out.
	usage: mapOf(bucketOut, MAX_BUCKETS),
});

type UsageQuery = z.infer<typeof usageQuery>;

// The hours the query covers: every hour from ge's to le's, both included. A `day` bucket
// sums those hours of its day, so a query's totals are the same whatever its bucket.
function hoursOf(query: UsageQuery) {
	const le = query.le ?? now();
	const ge = query.ge ?? le - DEFAULT_SPAN_SECONDS;
	const refuse = (path: string, message: string) =>
		new ApiError("validation", { description: `${path}: ${message}`, details: [{ path, message }] });
	if (ge > le) throw refuse("ge", "ge must not be after le");
	if (le - ge > MAX_RANGE_SECONDS) throw refuse("le", "le must be at most 31 days after ge");
	return { from: hourOf(ge), to: hourOf(le) };
}

// One object call: this isolate's counts of the account not yet handed over go with it, then
// the object answers from its own storage. No D1.
function readUsage(ctx: Context & { caller: Caller }, user: string | null, query: UsageQuery) {
	const { from, to } = hoursOf(query);
	const account = ctx.caller.account;
	return accountClient(ctx, account).readUsage(user, pendingUsage(account), from, to, query.bucket);
}

export const getAccountUsage = defineOperation({
	name: "get_account_usage",
	summary: "The caller's account's usage by hour or day: requests, D1 rows, twins, ledger bytes, messages, stickers",
	description:
		"The caller's account's usage by hour or day between ge and le: requests, D1 rows, twins, ledger bytes, messages and stickers.",
	auth: "secret",
	query: usageQuery,
	response: usageAnswer,
	async run({ query }, ctx) {
		return { usage: await readUsage(ctx, null, query) };
	},
});

export const getUserUsage = defineOperation({
	name: "get_user_usage",
	summary: "The usage of one user of the caller's account, by hour or day",
	description: "The usage of one user of the caller's account by hour or day between ge and le.",
	refuses: ["not_found"],
	auth: "secret",
	params: z.strictObject({ user: uuid }),
	query: usageQuery,
	response: usageAnswer,
	// A user of another account is as unknown as one of none: the same index lookup, 404102.
	async locate(params, ctx) {
		const found = await findUser(dbOf(ctx), ctx.caller.account, params.user);
		if (!found) throw new ApiError("not_found", { description: "No such user" });
		return found.uuid;
	},
	async run({ query, located }, ctx) {
		return { usage: await readUsage(ctx, located, query) };
	},
});

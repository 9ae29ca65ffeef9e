import * as z from "zod/mini";
import { listDeliveries, MAX_DELIVERIES_KEPT } from "../db/deliveries";
import {
	effectiveStatus,
	findOwnSubscription,
	listSubscriptions,
	patchSubscription,
	type SubscriptionRow,
} from "../db/subscriptions";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { subscriptionView } from "../notifications/messages";
import { type Context, defineOperation } from "./operation";
import { mapOf, subscriptionOut, timestampOut, topic, uuid, uuidOut, withMeta } from "./schemas";
import { cursorIn, cursorOut, openCursor, pageLimit, sealCursor } from "./paging";
import { newConfirmation, queueConfirmation } from "./webhook-confirmation";
import { endSubscription, subscriptionDb, subscriptionLimit } from "./webhooks";
import { dbOf } from "../db/client";

// The owning account's view of its subscriptions, with a User Secret instead of the token.
// Another account's subscription answers exactly as one that does not exist.

const statuses = ["pending", "confirmed", "unsubscribed", "expired", "failed"] as const;
const subscriptionParams = z.strictObject({ subscription: uuid });

const subscriptionDetail = z.extend(subscriptionOut, {
	callback_url: z.string(),
	created_ts: timestampOut,
	updated_ts: timestampOut,
	attempts: withMeta(z.number().check(z.int()), {
		description: "Delivery attempts of the current confirmation message",
	}),
	last_attempt_ts: z.nullable(timestampOut),
	last_outcome: z.nullable(z.string()),
	delivered_ts: withMeta(z.nullable(timestampOut), { description: "When the confirmation message was delivered" }),
	failure_reason: withMeta(z.nullable(z.string()), { description: "Why the subscription is failed" }),
});

function detail(row: SubscriptionRow, at = now()) {
	return {
		...subscriptionView(row, at),
		callback_url: row.callback_url,
		created_ts: row.created_ts,
		updated_ts: row.updated_ts,
		attempts: row.attempts,
		last_attempt_ts: row.last_attempt_ts,
		last_outcome: row.last_outcome,
		delivered_ts: row.delivered_ts,
		failure_reason: row.failure_reason,
	};
}

async function ownSubscription(ctx: Context & { caller: { account: string } }, subscription: string) {
	// Another account's subscription reports what an absent one costs. Its uuid names the
	// database that would keep it (its publisher's), whoever it belongs to.
	const row = await ctx.meter.sightedOne(
		() => findOwnSubscription(subscriptionDb(ctx, subscription), ctx.caller.account, subscription),
		() => true,
	);
	if (!row) throw new ApiError("not_found", { description: "No such subscription" });
	return row;
}

// A page holds at most this many subscriptions. Each is at most about 1.3 KB of JSON (its
// 36-character key; a callback URL of at most 512 characters, twice that if every character
// needed an escape; a topic of at most 48; a status and three timestamps), so a page stays
// under 1.5 MB, far from a Worker's 4 MiB answer budget.
export const MAX_SUBSCRIPTIONS_PAGE = 1000;

const listPosition = z.tuple([z.number().check(z.nonnegative()), z.string().check(z.maxLength(64))]);

export const getWebhookSubscriptions = defineOperation({
	name: "get_webhook_subscriptions",
	summary: "The caller's account's webhook subscriptions, optionally of one topic and/or status, oldest first; paged",
	description:
		"The caller's account's webhook subscriptions, oldest first, optionally of one topic and/or status; paged by cursor.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	query: z.strictObject({
		topic: z.optional(topic),
		status: z.optional(z.enum(statuses)),
		limit: z._default(z.optional(pageLimit(MAX_SUBSCRIPTIONS_PAGE)), 100),
		cursor: z.optional(cursorIn),
	}),
	response: z.object({
		subscriptions: mapOf(
			z.object({
				topic: z.string(),
				status: z.enum(statuses),
				callback_url: z.string(),
				validity_ts: timestampOut,
				created_ts: timestampOut,
				updated_ts: timestampOut,
			}),
			MAX_SUBSCRIPTIONS_PAGE,
		),
		cursor: cursorOut,
	}),
	async run({ query }, ctx) {
		const at = now();
		const scope = `get_webhook_subscriptions/${ctx.caller.user}/${JSON.stringify([query.topic ?? null, query.status ?? null])}`;
		const position = await openCursor(ctx.env, scope, query.cursor, listPosition);
		const after = position && { created_ts: position[0], uuid: position[1] };
		// Kept with their publishers: every database is asked, whatever it holds (docs/scaling.md).
		const dbs = ctx.shards.all().map((binding) => dbOf({ d1: ctx.shards.of(binding) }));
		const { rows, more } = await listSubscriptions(dbs, ctx.caller.account, query, at, after, query.limit);
		const last = rows.at(-1);
		return {
			subscriptions: Object.fromEntries(rows.map((row) => [row.uuid, { ...row, status: effectiveStatus(row, at) }])),
			cursor: more && last ? await sealCursor(ctx.env, scope, [last.created_ts, last.uuid]) : null,
		};
	},
});

export const getWebhookSubscription = defineOperation({
	name: "get_webhook_subscription",
	summary: "One subscription: its state, callback URL, attempt count and the reason of a failure",
	description: "One subscription of the caller's account: status, callback URL, attempts and the reason of a failure.",
	refuses: ["not_found"],
	auth: "secret",
	params: subscriptionParams,
	response: subscriptionDetail,
	async run({ params }, ctx) {
		return detail(await ownSubscription(ctx, params.subscription));
	},
});

export const getWebhookDeliveries = defineOperation({
	name: "get_webhook_deliveries",
	summary: "Every recorded delivery attempt to a subscription, newest first (the newest 100 are kept)",
	description:
		"The recorded delivery attempts to a subscription of the caller's account, newest first (the newest 100 are kept).",
	refuses: ["not_found"],
	auth: "secret",
	params: subscriptionParams,
	response: z.object({
		deliveries: z
			.array(
				z.object({
					message: uuidOut,
					attempt: z.number().check(z.int()),
					attempted_ts: timestampOut,
					outcome: z.enum(["delivered", "retry", "failed"]),
					http_status: withMeta(z.nullable(z.number().check(z.int())), {
						description: "null when no answer came (timeout, network error)",
					}),
					duration_ms: z.number().check(z.int()),
					next_attempt_ts: withMeta(z.nullable(timestampOut), {
						description: "When the next attempt is due; null if none will follow",
					}),
					detail: z.string(),
				}),
			)
			.check(z.maxLength(MAX_DELIVERIES_KEPT)),
	}),
	async run({ params }, ctx) {
		const row = await ownSubscription(ctx, params.subscription);
		return { deliveries: await listDeliveries(subscriptionDb(ctx, row.uuid), row.uuid) };
	},
});

export const resendWebhookConfirmation = defineOperation({
	name: "resend_webhook_confirmation",
	summary: "Send a pending or failed subscription a new confirmation message with a new token",
	description:
		"Sends a pending or failed subscription of the caller's account a new confirmation message with a new token; the old token stops working.",
	refuses: ["not_found", "subscription_expired", "conflict", "subscription_limit", "webhooks_unconfigured"],
	auth: "secret",
	params: subscriptionParams,
	response: subscriptionDetail,
	async run({ params }, ctx) {
		const row = await ownSubscription(ctx, params.subscription);
		const at = now();
		const status = effectiveStatus(row, at);
		if (status === "expired") throw new ApiError("subscription_expired");
		if (status !== "pending" && status !== "failed") {
			throw new ApiError("conflict", {
				description: `The subscription is ${status}: it takes no confirmation message`,
			});
		}
		// Every resend issues a message, so every one counts against the limit, in the subscriber's
		// object, which counts over every database and issues it in one step, one at a time
		// (account/facets/subscriptions.ts): concurrent resends cannot pass it.
		const limit = Number(ctx.env.MAX_SUBSCRIPTIONS);
		// The old token dies with the new one, and the old job finds another message and stops.
		const confirmation = await newConfirmation(ctx.env, row.uuid);
		const pending = await accountClient(ctx, ctx.caller.account).reissue(row, confirmation, limit, at);
		if (!pending) {
			// Refused with the row as it was read: the limit was the condition that failed.
			const current = await findOwnSubscription(subscriptionDb(ctx, row.uuid), row.account, row.uuid);
			if (current?.status === row.status && current.message === row.message) throw subscriptionLimit(limit);
			throw new ApiError("conflict", { description: "The subscription changed meanwhile; try again" });
		}
		const reason = "the new confirmation message could not be queued";
		await queueConfirmation(ctx, pending, () =>
			patchSubscription(subscriptionDb(ctx, row.uuid), row.uuid, { status: "failed", failure_reason: reason }, now()),
		);
		return detail(pending, at);
	},
});

export const deleteWebhookSubscription = defineOperation({
	name: "delete_webhook_subscription",
	summary: "End a subscription without its token (idempotent); it stays listed as unsubscribed",
	description:
		"Ends a subscription of the caller's account without its token (idempotent); it stays listed as unsubscribed.",
	refuses: ["not_found"],
	auth: "secret",
	params: subscriptionParams,
	response: subscriptionDetail,
	async run({ params }, ctx) {
		const row = await ownSubscription(ctx, params.subscription);
		return detail(row.status === "unsubscribed" ? row : await endSubscription(ctx, row));
	},
});

import * as z from "zod/mini";
import { sibling } from "../base/shards";
import { randomBase64Url, sha256Hex } from "../base/crypto";
import { isGranted } from "../db/grants";
import {
	deleteSubscription,
	ENDED_SUBSCRIPTION,
	findByToken,
	patchSubscription,
	type SubscriptionRow,
} from "../db/subscriptions";
import { accountClient } from "../account/client";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { maySubscribe } from "../policy/grant";
import { lastingAtMost, madeUntil } from "../policy/token";
import { now } from "../base/time";
import { checkCallbackUrl, MAX_CALLBACK_URL_LENGTH } from "../notifications/callback-policy";
import { ROTATION_OVERLAP_SECONDS, sealKey } from "../notifications/signing";
import { subscriptionView, tokenUrl } from "../notifications/messages";
import { type Context, defineOperation } from "./operation";
import { subscriptionOut, topic, uuid, withMeta } from "./schemas";
import { newConfirmation, queueConfirmation } from "./webhook-confirmation";
import { dbOf } from "../db/client";

export const MAX_EXPIRES = 604_800;

const expires = z.number().check(z.int(), z.gte(1), z.lte(MAX_EXPIRES, `Must be at most ${MAX_EXPIRES} seconds`));
const clientSecret = z.string().check(z.regex(/^[A-Za-z0-9_=-]{16}$/, "Must be 16 URL-safe Base64 characters"));

// A subscription's rows are kept in its publisher's database, which its uuid names
// (docs/scaling.md), whichever account asks.
export const subscriptionDb = (ctx: Context, uuid: string) => dbOf({ d1: ctx.shards.for(uuid) });

// The token URL names the subscription: its token is the only proof a caller needs.
const tokenParams = z.strictObject({ account: z.string() });
const tokenQuery = z.strictObject({ token: z.string() });

// The subscription behind a token, while the token still works. Unknown or unsubscribed is 404,
// past its validity 400, failed 409: failed, unsubscribed and expired are final for a token,
// and only the owner's resend_webhook_confirmation issues a new one.
async function liveSubscription(ctx: Context, account: string, token: string): Promise<SubscriptionRow> {
	// Another account's token, or a dead one, reports what an unknown token costs. The URL names
	// the publisher, whose database keeps its subscriptions.
	const hash = token ? await sha256Hex(token) : undefined;
	const db = dbOf({ d1: ctx.shards.for(account) });
	const read = async () => (hash === undefined ? undefined : await findByToken(db, account, hash));
	const row = await ctx.meter.sightedOne(read, (found) => found.status !== "unsubscribed");
	if (!row) throw new ApiError("not_found", { description: "No such subscription" });
	if (row.status === "failed") throw new ApiError("subscription_failed");
	if (row.status === "expired" || row.validity_ts <= now()) {
		if (row.status !== "expired")
			await patchSubscription(subscriptionDb(ctx, row.uuid), row.uuid, { status: "expired" }, now(), {
				status: row.status,
			});
		throw new ApiError("subscription_expired");
	}
	return row;
}

// 403102 unless the caller may open the account's notifications to anyone (policy/grant.ts):
// by subscribing, or by granting its topics to another account.
export function requireNotificationStanding(caller: Caller, what: string) {
	if (!maySubscribe(caller)) {
		throw new ApiError("escalation", {
			description: `Notifications show entries whatever their visibility: a role with a twin or entry rule may not ${what}`,
		});
	}
}

// Whether `publisher` grants the caller's account every one of `topics`, in one statement. For a
// grant of other topics only, D1's figure would count the grant's row and each topic it names,
// telling that the grant exists and how long it is; Server-Timing counts the row only when the
// topics are granted, so a refusal costs what it costs for an account that grants nothing or
// does not exist. `db` is the request's session of the publisher's database, which keeps its
// grants, or one that reads there at the primary.
export async function topicsGranted(
	ctx: Context & { caller: Pick<Caller, "account"> },
	publisher: string,
	topics: string[],
	db = dbOf({ d1: ctx.shards.for(publisher) }),
) {
	const [held] = await ctx.meter.sighted(
		async () => [await isGranted(db, publisher, ctx.caller.account, topics)],
		(holds) => holds,
	);
	return held === true;
}

export const webhookSubscribe = defineOperation({
	name: "webhook_subscribe",
	// With a client_secret the answer holds the server_secret of the signing key: not kept.
	replays: (body) => body.client_secret === undefined,
	summary: "Subscribe a callback URL to a topic; a confirmation message is sent to it",
	description:
		"Subscribes a callback URL to a topic of the caller's account, or of another account that granted it the topic, for expires seconds (a week at most, never past the User Token that subscribes, refreshes included); a confirmation message with a token goes to the URL, and messages flow once it is confirmed. With client_secret, messages are signed and the answer carries server_secret. A role with a twin or entry rule subscribes too: each message reaches it only as it could read it (of twins it sees, with the entries it sees; filtered to nothing, it is not sent), its DICT the subscribing request's.",
	refuses: ["topic_not_granted", "subscription_limit", "webhooks_unconfigured"],
	example: { callback_url: "https://example.com/hooks/twins", topic: "alerts", expires: 86400 },
	auth: "secret",
	status: 201,
	response: z.object({
		callback_url: z.string(),
		subscription: subscriptionOut,
		server_secret: z.optional(z.string()),
	}),
	body: z.strictObject({
		callback_url: z
			.string()
			.check(z.maxLength(MAX_CALLBACK_URL_LENGTH, `Must be at most ${MAX_CALLBACK_URL_LENGTH} characters`)),
		topic,
		client_secret: z.optional(clientSecret),
		expires: z._default(z.optional(expires), MAX_EXPIRES),
		account: withMeta(z.optional(uuid), {
			description: "The account whose topic this is (default: the caller's); another account's needs its grant",
		}),
	}),
	async run({ body }, ctx) {
		const publisher = body.account ?? ctx.caller.account;
		const granted = publisher !== ctx.caller.account;
		if (granted && !(await topicsGranted(ctx, publisher, [body.topic]))) throw new ApiError("topic_not_granted");
		// The policy is configuration (CALLBACK_POLICY), so it is checked here, not in the schema.
		const checked = checkCallbackUrl(body.callback_url, ctx.env.CALLBACK_POLICY);
		if ("refused" in checked) {
			throw new ApiError("validation", {
				description: `callback_url: ${checked.refused}`,
				details: [{ path: "callback_url", message: checked.refused }],
			});
		}
		const at = now();
		const lastsUntil = madeUntil(ctx.caller.credential!);
		// The subscription lives in its publisher's database, which its id names.
		const uuid = sibling(publisher);
		const serverSecret = body.client_secret ? randomBase64Url(12) : null;
		const confirmation = await newConfirmation(ctx.env, uuid);
		const limit = Number(ctx.env.MAX_SUBSCRIPTIONS);
		// The subscriber's object counts its subscriptions in every database and writes this one in
		// its publisher's, one subscribe of the account at a time (account/facets/subscriptions.ts);
		// the grant is checked again as the row is written.
		const row = await accountClient(ctx, ctx.caller.account).subscribe(
			{
				uuid,
				account: ctx.caller.account,
				publisher,
				user: ctx.caller.user,
				topic: body.topic,
				callback_url: checked.url,
				status: "pending",
				validity_ts: lastingAtMost(at + body.expires, lastsUntil),
				lasts_until: lastsUntil,
				attempts: 0,
				last_attempt_ts: null,
				last_outcome: null,
				delivered_ts: null,
				failure_reason: null,
				...confirmation,
				sealed_key:
					body.client_secret && serverSecret ? await sealKey(ctx.env, uuid, body.client_secret, serverSecret) : null,
				sealed_previous_key: null,
				previous_key_until: null,
				created_ts: at,
				updated_ts: at,
				// What its subscriber's rules read as DICT when its messages are filtered.
				dict: ctx.caller.dict ?? null,
			},
			limit,
			at,
		);
		// The grant was checked above; a revocation landing in between makes this a 403 too.
		if (!row && granted && !(await topicsGranted(ctx, publisher, [body.topic])))
			throw new ApiError("topic_not_granted");
		if (!row) throw subscriptionLimit(limit);
		await queueConfirmation(ctx, row, () => deleteSubscription(subscriptionDb(ctx, row.uuid), row.uuid));
		return {
			callback_url: row.callback_url,
			subscription: subscriptionView(row),
			...(serverSecret ? { server_secret: serverSecret } : {}),
		};
	},
});

// The flat subscription of the confirm answer, with the URLs that manage it.
function managed(row: SubscriptionRow, url: string) {
	return { ...subscriptionView(row), unsubscribe_url: url, refresh_url: url };
}

// Said of every token route in the API document.
const TOKEN_PROOF =
	"The token of the subscription's confirmation message is the proof: unknown or unsubscribed is 404102, expired 400105, failed 409106.";

export const confirmSubscription = defineOperation({
	name: "confirm_a_webhook_subscription",
	summary: "Confirm a subscription with the token of its confirmation message (idempotent)",
	description: `Confirms a subscription (idempotent): the URL of its confirmation message. ${TOKEN_PROOF}`,
	refuses: ["not_found", "subscription_expired", "subscription_failed"],
	auth: "none",
	response: z.extend(subscriptionOut, { unsubscribe_url: z.string(), refresh_url: z.string() }),
	params: tokenParams,
	query: tokenQuery,
	async run({ params, query }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		// Built first: a server without PUBLIC_URL refuses before it changes anything.
		const url = tokenUrl(ctx.env, row.publisher, query.token);
		if (row.status === "confirmed") return managed(row, url);
		// Only from pending: a concurrent unsubscribe or failure wins, and this answers as it.
		const confirmed = await patchSubscription(subscriptionDb(ctx, row.uuid), row.uuid, { status: "confirmed" }, now(), {
			status: "pending",
			message: row.message,
		});
		return managed(confirmed ?? (await liveSubscription(ctx, params.account, query.token)), url);
	},
});

export const refreshSubscription = defineOperation({
	name: "webhook_refresh_subscription",
	summary: "Extend a subscription's validity and/or rotate its signing key with a new client_secret",
	description: `Extends a subscription's validity by expires seconds from now (never past the User Token that made it) and/or rotates its signing key with a new client_secret. ${TOKEN_PROOF}`,
	refuses: ["not_found", "subscription_expired", "subscription_failed", "conflict", "webhooks_unconfigured"],
	example: { expires: 604800 },
	auth: "none",
	response: z.object({
		subscription: subscriptionOut,
		callback_url: z.string(),
		server_secret: z.optional(z.string()),
	}),
	params: tokenParams,
	query: tokenQuery,
	body: z.strictObject({ expires: z.optional(expires), client_secret: z.optional(clientSecret) }),
	async run({ params, query, body }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		const at = now();
		// Without expires the validity stays as it is.
		const changes: Parameters<typeof patchSubscription>[2] =
			body.expires === undefined ? {} : { validity_ts: lastingAtMost(at + body.expires, row.lasts_until) };
		const serverSecret = body.client_secret ? randomBase64Url(12) : null;
		if (body.client_secret && serverSecret) {
			// The new key signs from now on; the old one signs alongside it for a day.
			changes.sealed_key = await sealKey(ctx.env, row.uuid, body.client_secret, serverSecret);
			changes.sealed_previous_key = row.sealed_key;
			changes.previous_key_until = row.sealed_key ? at + ROTATION_OVERLAP_SECONDS : null;
		}
		const refreshed = await patchSubscription(subscriptionDb(ctx, row.uuid), row.uuid, changes, at, {
			status: row.status,
		});
		if (!refreshed) {
			// Its state changed meanwhile (confirmed, failed, ended): answer as the token now stands.
			await liveSubscription(ctx, params.account, query.token);
			throw new ApiError("conflict", { description: "The subscription changed meanwhile; try again" });
		}
		return {
			subscription: subscriptionView(refreshed),
			callback_url: refreshed.callback_url,
			...(serverSecret ? { server_secret: serverSecret } : {}),
		};
	},
});

export const unsubscribe = defineOperation({
	name: "webhook_unsubscribe",
	summary: "End a subscription; its token is dead afterwards",
	description: `Ends a subscription; its token is dead afterwards. ${TOKEN_PROOF}`,
	refuses: ["not_found", "subscription_expired", "subscription_failed"],
	auth: "none",
	response: subscriptionOut,
	params: tokenParams,
	query: tokenQuery,
	async run({ params, query }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		return subscriptionView(await endSubscription(ctx, row));
	},
});

// Ends a subscription (the token's unsubscribe, the owner's delete): the secrets it kept are
// dropped with it.
export async function endSubscription(ctx: Context, row: SubscriptionRow) {
	return (await patchSubscription(subscriptionDb(ctx, row.uuid), row.uuid, ENDED_SUBSCRIPTION, now())) ?? row;
}

// One more confirmation message would pass MAX_SUBSCRIPTIONS: what counts is the account's
// live subscriptions and its confirmation messages of the last 24 hours (src/db/subscriptions.ts).
export function subscriptionLimit(limit: number) {
	return new ApiError("subscription_limit", {
		description: `The account's live webhook subscriptions and confirmation messages of the last 24 hours have reached its limit of ${limit} (MAX_SUBSCRIPTIONS)`,
	});
}

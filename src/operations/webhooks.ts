import { z } from "zod";
import { randomBase64Url, sha256Hex } from "../base/crypto";
import {
	deleteSubscription,
	findByToken,
	insertSubscriptionWithin,
	patchSubscription,
	type SubscriptionRow,
} from "../db/subscriptions";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { checkCallbackUrl, MAX_CALLBACK_URL_LENGTH } from "../webhooks/callback-policy";
import { type ConfirmationJob, subscriptionView } from "../webhooks/message";
import { type Context, defineOperation } from "./operation";
import { subscriptionOut } from "./schemas";

export const MAX_EXPIRES = 604_800;

const expires = z.number().int().min(1).max(MAX_EXPIRES, `Must be at most ${MAX_EXPIRES} seconds`);
const clientSecret = z.string().regex(/^[A-Za-z0-9_=-]{16}$/, "Must be 16 URL-safe Base64 characters");

// The token URL names the subscription: its token is the only proof a caller needs.
const tokenParams = z.strictObject({ account: z.string() });
const tokenQuery = z.strictObject({ token: z.string() });

function tokenUrl(ctx: Context, account: string, token: string) {
	return `${ctx.url.origin}/notifications/webhooks/${account}?token=${token}`;
}

// A live subscription behind a token: unknown or unsubscribed is 404, past its validity 400.
async function liveSubscription(ctx: Context, account: string, token: string): Promise<SubscriptionRow> {
	const before = ctx.meter.snapshot();
	const row = token ? await findByToken(ctx.db, account, await sha256Hex(token)) : undefined;
	if (!row || row.status === "unsubscribed") {
		// Another account's token, or a dead one, reports what an unknown token costs.
		ctx.meter.concealReadsSince(before);
		throw new ApiError("not_found", { description: "No such subscription" });
	}
	if (row.status === "expired" || row.validity_ts <= now()) {
		if (row.status !== "expired") await patchSubscription(ctx.db, row.uuid, { status: "expired" }, now());
		throw new ApiError("subscription_expired");
	}
	return row;
}

export const webhookSubscribe = defineOperation({
	name: "webhook_subscribe",
	summary: "Subscribe a callback URL to a topic; a confirmation message is sent to it",
	auth: "secret",
	status: 201,
	response: z.object({ callback_url: z.string(), subscription: subscriptionOut, server_secret: z.string().optional() }),
	body: z.strictObject({
		callback_url: z.string().max(MAX_CALLBACK_URL_LENGTH, `Must be at most ${MAX_CALLBACK_URL_LENGTH} characters`),
		topic: z.string().regex(/^[0-9A-Za-z-]{3,48}$/, "Must be 3 to 48 letters, digits or '-'"),
		client_secret: clientSecret.optional(),
		expires: expires.optional().default(MAX_EXPIRES),
	}),
	async run({ body }, ctx) {
		// The policy is configuration (CALLBACK_POLICY), so it is checked here, not in the schema.
		const checked = checkCallbackUrl(body.callback_url, ctx.env.CALLBACK_POLICY);
		if ("refused" in checked) {
			throw new ApiError("validation", { description: `callback_url: ${checked.refused}`, details: [{ path: "callback_url", message: checked.refused }] });
		}
		const at = now();
		const token = randomBase64Url(32);
		const serverSecret = body.client_secret ? randomBase64Url(12) : null;
		const limit = Number(ctx.env.MAX_SUBSCRIPTIONS);
		const row = await insertSubscriptionWithin(ctx.db, {
			uuid: crypto.randomUUID(),
			account: ctx.caller.account,
			user: ctx.caller.user,
			topic: body.topic,
			callback_url: checked.url,
			token_hash: await sha256Hex(token),
			status: "pending",
			validity_ts: at + body.expires,
			message: crypto.randomUUID(),
			attempts: 0,
			last_attempt_ts: null,
			last_outcome: null,
			delivered_ts: null,
			created_ts: at,
			updated_ts: at,
		}, limit, at);
		if (!row) {
			throw new ApiError("subscription_limit", { description: `The account already has ${limit} live webhook subscriptions, its limit (MAX_SUBSCRIPTIONS)` });
		}
		const job: ConfirmationJob = {
			kind: "confirmation",
			subscription: row.uuid,
			message: row.message,
			confirmation_url: tokenUrl(ctx, row.account, token),
			client_secret: body.client_secret ?? null,
			server_secret: serverSecret,
		};
		try {
			await ctx.env.WEBHOOKS.send(job);
		} catch (error) {
			// Without its message the subscription could never be confirmed: take it back.
			await deleteSubscription(ctx.db, row.uuid);
			throw error;
		}
		return {
			callback_url: row.callback_url,
			subscription: subscriptionView(row),
			...(serverSecret ? { server_secret: serverSecret } : {}),
		};
	},
});

// The flat subscription of the confirm answer, with the URLs that manage it.
function managed(ctx: Context, row: SubscriptionRow, token: string) {
	const url = tokenUrl(ctx, row.account, token);
	return { ...subscriptionView(row), unsubscribe_url: url, refresh_url: url };
}

export const confirmSubscription = defineOperation({
	name: "confirm_a_webhook_subscription",
	summary: "Confirm a subscription with the token of its confirmation message (idempotent)",
	auth: "none",
	response: subscriptionOut.extend({ unsubscribe_url: z.string(), refresh_url: z.string() }),
	params: tokenParams,
	query: tokenQuery,
	async run({ params, query }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		const confirmed = row.status === "confirmed" ? row : await patchSubscription(ctx.db, row.uuid, { status: "confirmed" }, now());
		return managed(ctx, confirmed, query.token);
	},
});

export const refreshSubscription = defineOperation({
	name: "webhook_refresh_subscription",
	summary: "Extend a subscription's validity; a new client_secret gets a new server_secret",
	auth: "none",
	response: z.object({ subscription: subscriptionOut, callback_url: z.string(), server_secret: z.string().optional() }),
	params: tokenParams,
	query: tokenQuery,
	body: z.strictObject({ expires: expires.optional().default(MAX_EXPIRES), client_secret: clientSecret.optional() }),
	async run({ params, query, body }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		const at = now();
		const refreshed = await patchSubscription(ctx.db, row.uuid, { validity_ts: at + body.expires }, at);
		return {
			subscription: subscriptionView(refreshed),
			callback_url: refreshed.callback_url,
			...(body.client_secret ? { server_secret: randomBase64Url(12) } : {}),
		};
	},
});

export const unsubscribe = defineOperation({
	name: "webhook_unsubscribe",
	summary: "End a subscription; its token is dead afterwards",
	auth: "none",
	response: subscriptionOut,
	params: tokenParams,
	query: tokenQuery,
	async run({ params, query }, ctx) {
		const row = await liveSubscription(ctx, params.account, query.token);
		return subscriptionView(await patchSubscription(ctx.db, row.uuid, { status: "unsubscribed" }, now()));
	},
});

import * as z from "zod/mini";
import { listGrants, replaceGrant } from "../db/grants";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { defineOperation } from "./operation";
import { mapOf, topic, uuid } from "./schemas";
import { cursorIn, cursorOut, openCursor, pageLimit, sealCursor } from "./paging";
import { requireNotificationStanding } from "./webhooks";
import { revokeUngranted } from "../notifications/streams/client";
import { dbOf } from "../db/client";

export const MAX_GRANTED_TOPICS = 100;

// A page holds at most this many grants. Each is at most about 5.2 KB of JSON (its
// 36-character key and up to 100 topics of up to 48 characters), so a page stays under
// 1.3 MB, far from a Worker's 4 MiB answer budget.
export const MAX_GRANTS_PAGE = 250;

const topics = z.array(topic).check(z.maxLength(MAX_GRANTED_TOPICS, `At most ${MAX_GRANTED_TOPICS} topics`));

// `topics` is the client's name for the list, `publish` the reference page's: either, not both.
const accessBody = z.strictObject({ topics: z.optional(topics), publish: z.optional(topics) }).check(
	z.refine((b) => (b.topics === undefined) !== (b.publish === undefined), {
		message: "Give either topics or publish",
	}),
);

export const updateNotificationsAccountAccess = defineOperation({
	name: "update_notifications_account_access",
	summary: "Replace the topics another account may subscribe to; [] revokes all and ends its subscriptions to them",
	description:
		"Replaces the topics another account may subscribe to or stream; [] revokes them all and ends that account's subscriptions to them. A role with a twin or entry rule may not (403102): notifications show entries whatever their visibility.",
	refuses: ["escalation", "grantee_limit"],
	example: { topics: ["alerts", "status-changes"] },
	auth: "secret",
	params: z.strictObject({ account: uuid }),
	body: accessBody,
	response: z.object({ topics: z.array(z.string()).check(z.maxLength(MAX_GRANTED_TOPICS)) }),
	async run({ params, body }, ctx) {
		requireNotificationStanding(ctx.caller, "grant topics");
		// Whether the account exists is not checked: no answer may tell that it does.
		if (params.account === ctx.caller.account) {
			const message = "Must be another account";
			throw new ApiError("validation", { description: `account: ${message}`, details: [{ path: "account", message }] });
		}
		const granted = [...new Set(body.topics ?? body.publish ?? [])];
		const limit = Number(ctx.env.MAX_GRANTEES);
		if (!(await replaceGrant(dbOf(ctx), ctx.caller.account, params.account, granted, now(), limit))) {
			throw new ApiError("grantee_limit", {
				description: `The account already grants topics to ${limit} accounts, its limit (MAX_GRANTEES)`,
			});
		}
		// Its streams reading a topic no longer granted end, as its subscriptions did in the batch.
		await revokeUngranted(ctx.env, ctx.caller.account, params.account, granted);
		return { topics: granted };
	},
});

const grantPosition = z.tuple([z.string().check(z.maxLength(64))]);

export const getNotificationsAccess = defineOperation({
	name: "get_notifications_access",
	summary: "The accounts the caller's account lets subscribe to its topics, and which topics, in account order; paged",
	description:
		"The accounts the caller's account lets subscribe to its topics, with the topics, in account order; paged by cursor.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	query: z.strictObject({
		limit: z._default(z.optional(pageLimit(MAX_GRANTS_PAGE)), 100),
		cursor: z.optional(cursorIn),
	}),
	response: z.object({
		accounts: mapOf(z.object({ topics: z.array(z.string()).check(z.maxLength(MAX_GRANTED_TOPICS)) }), MAX_GRANTS_PAGE),
		cursor: cursorOut,
	}),
	async run({ query }, ctx) {
		const scope = `get_notifications_access/${ctx.caller.user}`;
		const after = (await openCursor(ctx.env, scope, query.cursor, grantPosition))?.[0] ?? null;
		const { rows, more } = await listGrants(dbOf(ctx), ctx.caller.account, after, query.limit);
		const last = rows.at(-1);
		return {
			accounts: Object.fromEntries(rows.map((row) => [row.grantee, { topics: row.topics }])),
			cursor: more && last ? await sealCursor(ctx.env, scope, [last.grantee]) : null,
		};
	},
});

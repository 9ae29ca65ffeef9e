import * as z from "zod";
import { listGrants, replaceGrant } from "../db/grants";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { defineOperation } from "./operation";
import { uuid } from "./schemas";
import { requireNotificationStanding, topic } from "./webhooks";

export const MAX_GRANTED_TOPICS = 100;

const topics = z.array(topic).max(MAX_GRANTED_TOPICS, `At most ${MAX_GRANTED_TOPICS} topics`);

// `topics` is the client's name for the list, `publish` the reference page's: either, not both.
const accessBody = z
	.strictObject({ topics: topics.optional(), publish: topics.optional() })
	.refine((b) => (b.topics === undefined) !== (b.publish === undefined), { message: "Give either topics or publish" });

export const updateNotificationsAccountAccess = defineOperation({
	name: "update_notifications_account_access",
	summary: "Replace the topics another account may subscribe to; [] revokes all and ends its subscriptions to them",
	auth: "secret",
	params: z.strictObject({ account: uuid }),
	body: accessBody,
	response: z.object({ topics: z.array(z.string()) }),
	async run({ params, body }, ctx) {
		requireNotificationStanding(ctx.caller, "grant topics");
		// Whether the account exists is not checked: no answer may tell that it does.
		if (params.account === ctx.caller.account) {
			const message = "Must be another account";
			throw new ApiError("validation", { description: `account: ${message}`, details: [{ path: "account", message }] });
		}
		const granted = [...new Set(body.topics ?? body.publish ?? [])];
		await replaceGrant(ctx.db, ctx.caller.account, params.account, granted, now());
		return { topics: granted };
	},
});

export const getNotificationsAccess = defineOperation({
	name: "get_notifications_access",
	summary: "The accounts the caller's account lets subscribe to its topics, and which topics",
	auth: "secret",
	response: z.object({ accounts: z.record(z.string(), z.object({ topics: z.array(z.string()) })) }),
	async run(_input, ctx) {
		const rows = await listGrants(ctx.db, ctx.caller.account);
		return { accounts: Object.fromEntries(rows.map((row) => [row.grantee, { topics: row.topics }])) };
	},
});

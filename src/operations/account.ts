import * as z from "zod/mini";
import { findAccount, setResourceAccessLog } from "../db/accounts";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { defineOperation } from "./operation";
import { timestampOut, unsupportedSetting, uuidOut } from "./schemas";
import { dbOf } from "../db/client";

// The caller's account as the original shows it: no description (there is no ACCOUNT rule
// root either), and a resource access log setting that only "none" can be given here.
const accountRecord = z.object({
	uuid: uuidOut,
	created_ts: timestampOut,
	updated_ts: timestampOut,
	resource_access_log: z.nullable(z.strictObject({})),
});

export const getAccount = defineOperation({
	name: "get_account",
	summary: "The caller's account",
	description: "The caller's account: its uuid, timestamps and resource access log setting.",
	auth: "secret",
	response: accountRecord,
	async run(_input, ctx) {
		const account = await findAccount(dbOf(ctx), ctx.caller.account);
		// The credential's row joined the account's user a moment ago; gone since, it is as absent.
		if (!account) throw new ApiError("not_found", { description: "No such account" });
		return account;
	},
});

export const updateAccount = defineOperation({
	name: "update_account",
	summary: "Change the caller's account: only resource_access_log, to null or {}",
	description:
		"Changes the caller's account. Only resource_access_log may be given, and only as null or {} (access logs are not kept).",
	example: { resource_access_log: null },
	auth: "secret",
	response: accountRecord,
	body: z.strictObject({ resource_access_log: z.optional(unsupportedSetting) }),
	async run({ body }, ctx) {
		const updated =
			body.resource_access_log === undefined
				? await findAccount(dbOf(ctx), ctx.caller.account)
				: await setResourceAccessLog(dbOf(ctx), ctx.caller.account, body.resource_access_log, now());
		if (!updated) throw new ApiError("not_found", { description: "No such account" });
		return updated;
	},
});

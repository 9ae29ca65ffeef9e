import * as z from "zod/mini";
import { readLog } from "../db/log";
import { ApiError } from "../base/errors";
import { open, seal } from "../base/seal";
import { defineOperation } from "./operation";
import { dbOf } from "../db/client";

// The account log: what background work could not do (a webhook that failed for good, an
// expired sticker, a truncated fan-out), written by alarms, queue consumers and delivery
// objects. The whole log is the account's: role rules do not filter it, and its lines hold
// uuids, triggers and statuses, never values, notes or URLs.

// Lines per call.
const LOG_PAGE = 100;

// The fragment is the position after the last line answered, sealed for the account: the
// lines' ids are shared by every account, and a bare one would tell how much all of them log.
const fragmentScope = (account: string) => `get_log/${account}`;

const fragment = z.string().check(z.regex(/^[0-9A-Za-z_-]{1,64}$/, "Must be 1 to 64 letters, digits, '_' or '-'"));

async function positionOf(env: Env, account: string, text: string): Promise<number> {
	try {
		const id = Number(await open(env, fragmentScope(account), "cursor", text));
		if (Number.isSafeInteger(id) && id >= 0) return id;
	} catch {
		// Not sealed by us, or for another account: refused below.
	}
	throw new ApiError("validation", {
		description: "The fragment is not one this account's log gave",
		details: [{ path: "fragment", message: "Give a fragment get_log answered, or none" }],
	});
}

export const getLog = defineOperation({
	name: "get_log",
	summary:
		"The account's log of what background work could not do, oldest first; give the answered fragment to read on",
	description:
		"The account's log of what background work could not do (a webhook that failed, a sticker that expired), oldest first. Give the answered fragment to read only what came since.",
	auth: "secret",
	query: z.strictObject({ fragment: z.optional(fragment) }),
	response: z.object({ fragment: z.nullable(z.string()), messages: z.array(z.string()).check(z.maxLength(LOG_PAGE)) }),
	async run({ query }, ctx) {
		const account = ctx.caller.account;
		const after = query.fragment === undefined ? 0 : await positionOf(ctx.env, account, query.fragment);
		const lines = await readLog(dbOf(ctx), account, after, LOG_PAGE);
		const last = lines.at(-1);
		// Nothing new: the fragment stays where it was (null for an empty log read from its start).
		const next = last
			? await seal(ctx.env, fragmentScope(account), "cursor", String(last.id))
			: (query.fragment ?? null);
		return { fragment: next, messages: lines.map((line) => line.message) };
	},
});

import * as z from "zod/mini";
import { findTwin, insertTwinWithin, markTerminated, type TwinRow, type TwinState, writeDescription } from "../db/twins";
import { accountClient } from "../account/client";
import type { Caller } from "../base/caller";
import type { Json } from "../rules/ast";
import { ApiError } from "../base/errors";
import { isVisible } from "../rules/visibility";
import { now } from "../base/time";
import type { Context } from "./operation";
import { pageLimit } from "./paging";
import { defineOperation, JsonText, StaleGuess } from "./operation";
import { description, descriptionPatch, queryBoolean, ruleText, twinRecord, uuid, uuidOut } from "./schemas";
import { descriptionTooLarge, MAX_DESCRIPTION_BYTES } from "../base/limits";
import { dbOf } from "../db/client";

const twinParams = z.strictObject({ twin: uuid });

// What rules and the account's object need of a twin (not its certificates).
export function twinView(twin: TwinRow) {
	return { uuid: twin.uuid, owner: twin.owner, status: twin.status, description: twin.description as Json };
}

// A twin the caller may not see answers exactly as a twin that does not exist, and so does a
// terminated one when the caller asks for alive twins only.
export async function visibleTwin(ctx: Context, caller: Caller, uuid: string, aliveOnly = false): Promise<TwinRow> {
	const at = now();
	const sees = (row: TwinRow) => isVisible(caller, row, at) && !(aliveOnly && row.status === "terminated");
	const twin = await ctx.meter.sightedOne(() => findTwin(dbOf(ctx), uuid), sees);
	if (twin) return twin;
	throw new ApiError("not_found", { description: "No such twin" });
}

// The `locate` of a route under /twins/{twin}: the twin the path names, if the caller sees it.
export const twinInPath = (params: { twin: string }, ctx: Context & { caller: Caller }) => visibleTwin(ctx, ctx.caller, params.twin);

// Why an owner's write matched no alive twin: it is not the caller's, or it is terminated.
function refusal(twin: Pick<TwinRow, "owner">, caller: Caller): ApiError {
	if (twin.owner !== caller.account) return new ApiError("not_owner", { description: "Only the owner's account may change a twin" });
	return new ApiError("twin_terminated");
}

// Said of every operation on one twin in the API document.
const VISIBLE_ONLY = "Only twins the caller can see (its role's twin rule; null: its own account's) are found; any other is 404102 as if absent.";

export const createTwin = defineOperation({
	name: "create_twin",
	summary: "Create a twin owned by the caller's account",
	description: "Creates an alive twin owned by the caller's account, with a description rules read as TWIN.<key>.",
	refuses: ["twin_limit"],
	example: { description: { site: "north", model: "pump-7" } },
	auth: "secret",
	response: twinRecord,
	status: 201,
	body: z.strictObject({ description: z.optional(description) }),
	async run({ body }, ctx) {
		const at = now();
		const twin = crypto.randomUUID();
		const limit = Number(ctx.env.MAX_TWINS);
		const created = await insertTwinWithin(dbOf(ctx), {
			uuid: twin,
			owner: ctx.caller.account,
			status: "alive",
			description: body.description ?? {},
			creation_certificate: { uuid: twin, creator: ctx.caller.account, created_ts: at },
			termination_certificate: null,
			updated_ts: at,
		}, limit);
		if (!created) throw new ApiError("twin_limit", { description: `The account already has ${limit} twins, its limit (MAX_TWINS)` });
		return created;
	},
});

export const getTwin = defineOperation({
	name: "get_twin",
	summary: "A twin visible to the caller",
	description: `A twin with its certificates. ${VISIBLE_ONLY} show_terminated=false hides a terminated one the same way.`,
	refuses: ["not_found"],
	auth: "secret",
	response: twinRecord,
	params: twinParams,
	query: z.strictObject({ show_terminated: z._default(z.optional(queryBoolean), true) }),
	async run({ params, query }, ctx) {
		return visibleTwin(ctx, ctx.caller, params.twin, !query.show_terminated);
	},
});

export const updateTwin = defineOperation({
	name: "update_twin",
	summary: "Replace or merge-patch the description of an alive twin the caller's account owns",
	description: `Replaces the description of an alive twin owned by the caller's account; sent as application/merge-patch+json, merges into it (RFC 7396: null removes a key), in the write itself, and the merged description must be at most 32 KiB. A description that ends as it was changes nothing. ${VISIBLE_ONLY}`,
	refuses: ["not_found", "not_owner", "twin_terminated"],
	example: { description: { site: "south", model: "pump-7" } },
	auth: "secret",
	response: twinRecord,
	params: twinParams,
	body: z.strictObject({ description }),
	merge: { body: z.strictObject({ description: descriptionPatch }), example: { description: { site: "south", serial: null } } },
	async run({ params, body, merge }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		const write = { merge, description: body.description };
		const written = await writeDescription(dbOf(ctx), ctx.caller.account, twin.uuid, write, now(), MAX_DESCRIPTION_BYTES);
		if ("row" in written) return written.row;
		throw writeRefusal(written.current, ctx.caller);
	},
});

// Why a description write matched nothing: the twin is not the caller's account's, or it is
// terminated, or else the description would have passed its limit.
function writeRefusal(current: TwinState, caller: Caller): ApiError {
	if (current.owner !== caller.account || current.status === "terminated") return refusal(current, caller);
	return descriptionTooLarge();
}

export const terminateTwin = defineOperation({
	name: "terminate_twin",
	summary: "Terminate an alive twin the caller's account owns",
	description: `Terminates an alive twin owned by the caller's account and writes its termination certificate. ${VISIBLE_ONLY}`,
	refuses: ["not_found", "not_owner", "twin_terminated"],
	auth: "secret",
	response: twinRecord,
	params: twinParams,
	async run({ params }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		const terminated = await markTerminated(dbOf(ctx), ctx.caller.account, twin.uuid, now());
		if (!terminated) throw refusal(twin, ctx.caller);
		return terminated;
	},
});

// A scan page examines at most this many twins.
const MAX_SCAN_COUNT = 1000;

export const scanTwins = defineOperation({
	name: "scan_twins",
	summary: "Page through the caller's account's twins: uuids, or details of the visible ones",
	description: "Pages through every twin of the caller's account, count at a time: uuids, or with details=true the records of those the caller can see. match filters with a rule over each twin; pass the answered cursor for the next page until it is null.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	response: z.object({ cursor: z.nullable(z.string()), twins: z.array(z.union([uuidOut, twinRecord])).check(z.maxLength(MAX_SCAN_COUNT)) }),
	query: z.strictObject({
		cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
		count: z._default(z.optional(pageLimit(MAX_SCAN_COUNT)), 100),
		match: z.optional(ruleText),
		details: z._default(z.optional(queryBoolean), false),
	}),
	checksCredential: true,
	async run({ query }, ctx) {
		const { cursor, ...request } = query;
		const bookmark = ctx.meter.latestBookmark();
		const answer = await accountClient(ctx, ctx.claim.caller.account).scan(ctx.claim, cursor, request, bookmark);
		if (answer.stale) throw new StaleGuess();
		return new JsonText(answer.page);
	},
});

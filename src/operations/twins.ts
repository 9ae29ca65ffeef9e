import * as z from "zod/mini";
import { sibling } from "../base/shards";
import {
	findTwin,
	insertTwinWithin,
	markTerminated,
	type TwinRow,
	type TwinState,
	type TwinWrite,
	writeDescription,
} from "../db/twins";
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
import { ifMatch } from "./preconditions";
import { dbFor, dbOf } from "../db/client";
import { homeOf } from "../db/shards";
import { markIn } from "../db/jobs";

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
	const twin = await ctx.meter.sightedOne(() => findTwin(dbFor(ctx, uuid), uuid), sees);
	if (twin) return twin;
	throw new ApiError("not_found", { description: "No such twin" });
}

// The `locate` of a route under /twins/{twin}: the twin the path names, if the caller sees it.
export const twinInPath = (params: { twin: string }, ctx: Context & { caller: Caller }) =>
	visibleTwin(ctx, ctx.caller, params.twin);

// A twin's ETag: its uuid and version, which every write that changes the twin raises in its
// own statement. The uuid keeps a tag of one twin from matching another's.
export const twinTag = (twin: Pick<TwinRow, "uuid" | "version">) => `"${twin.uuid}.${twin.version}"`;
const TAGGED = /^([0-9a-f-]{36})\.(\d{1,15})$/;

// The owner's write to the twin the caller found, with the versions its If-Match names: null
// when any will do (`*`, or no If-Match); a tag of another twin or not of ours names none. The
// header is read only now, so a twin the caller cannot see is 404102 whatever If-Match holds.
function writeOf(ctx: { caller: Caller }, twin: TwinRow, header: string | undefined): TwinWrite {
	const tags = ifMatch(header);
	const versions =
		tags === undefined || tags === "*"
			? null
			: tags.flatMap((tag) => {
					const [, uuid, version] = TAGGED.exec(tag) ?? [];
					return uuid === twin.uuid ? [Number(version)] : [];
				});
	return { owner: ctx.caller.account, uuid: twin.uuid, versions };
}

// Why a write of the caller's account to its alive twin matched nothing, in this order: the twin
// is another account's (403103) or terminated (400103), If-Match names none of its versions
// (412251, with its current ETag), or else the write's own condition (`own`) refused it.
function refusal(current: TwinState, write: TwinWrite, own?: () => ApiError): ApiError {
	if (current.owner !== write.owner)
		return new ApiError("not_owner", { description: "Only the owner's account may change a twin" });
	if (current.status === "terminated") return new ApiError("twin_terminated");
	if (own && (write.versions === null || write.versions.includes(current.version))) return own();
	return new ApiError("precondition_failed", { headers: { etag: twinTag(current) } });
}

// Said of every operation on one twin in the API document.
const VISIBLE_ONLY =
	"Only twins the caller can see (its role's twin rule; null: its own account's) are found; any other is 404102 as if absent.";

export const createTwin = defineOperation({
	name: "create_twin",
	summary: "Create a twin owned by the caller's account",
	description: "Creates an alive twin owned by the caller's account, with a description rules read as TWIN.<key>.",
	refuses: ["twin_limit"],
	example: { description: { site: "north", model: "pump-7" } },
	auth: "secret",
	response: twinRecord,
	etag: twinTag,
	status: 201,
	body: z.strictObject({ description: z.optional(description) }),
	async run({ body }, ctx) {
		const at = now();
		const twin = sibling(ctx.caller.account);
		const limit = Number(ctx.env.MAX_TWINS);
		const created = await insertTwinWithin(
			dbOf(ctx),
			{
				uuid: twin,
				owner: ctx.caller.account,
				status: "alive",
				description: body.description ?? {},
				creation_certificate: { uuid: twin, creator: ctx.caller.account, created_ts: at },
				termination_certificate: null,
				updated_ts: at,
				version: 1,
			},
			limit,
			ctx.line,
		);
		if (!created)
			throw new ApiError("twin_limit", {
				description: `The account already has ${limit} twins, its limit (MAX_TWINS)`,
			});
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
	etag: twinTag,
	params: twinParams,
	query: z.strictObject({ show_terminated: z._default(z.optional(queryBoolean), true) }),
	async run({ params, query }, ctx) {
		return visibleTwin(ctx, ctx.caller, params.twin, !query.show_terminated);
	},
});

// Said of update_twin and terminate_twin in the API document.
const PRECONDITION =
	"With If-Match (* or a list of ETags, compared strongly), a twin whose current ETag it does not name is 412251, answering that ETag, and nothing is written.";

export const updateTwin = defineOperation({
	name: "update_twin",
	summary: "Replace or merge-patch the description of an alive twin the caller's account owns",
	description: `Replaces the description of an alive twin owned by the caller's account; sent as application/merge-patch+json, merges into it (RFC 7396: null removes a key), in the write itself, and the merged description must be at most 32 KiB. A description that ends as it was changes nothing. ${PRECONDITION} ${VISIBLE_ONLY}`,
	refuses: ["not_found", "not_owner", "twin_terminated", "precondition_failed"],
	example: { description: { site: "south", model: "pump-7" } },
	auth: "secret",
	response: twinRecord,
	etag: twinTag,
	params: twinParams,
	headers: ["if-match"],
	body: z.strictObject({ description }),
	merge: {
		body: z.strictObject({ description: descriptionPatch }),
		example: { description: { site: "south", serial: null } },
	},
	async run({ params, headers, body, merge }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		const write = writeOf(ctx, twin, headers["if-match"]);
		// In the twin's database: its owner's (a write of another account matches nothing there).
		// A batch line's mark commits with it when that is the job's database (markIn): a twin of
		// another database is another account's, and its write is refused.
		const written = await writeDescription(
			dbFor(ctx, twin.uuid),
			write,
			{ merge, description: body.description },
			now(),
			MAX_DESCRIPTION_BYTES,
			markIn(ctx.env, ctx.line, twin.uuid),
		);
		if ("row" in written) return written.row;
		throw refusal(written.current, write, descriptionTooLarge);
	},
});

export const terminateTwin = defineOperation({
	name: "terminate_twin",
	summary: "Terminate an alive twin the caller's account owns",
	description: `Terminates an alive twin owned by the caller's account and writes its termination certificate. ${PRECONDITION} ${VISIBLE_ONLY}`,
	refuses: ["not_found", "not_owner", "twin_terminated", "precondition_failed"],
	auth: "secret",
	response: twinRecord,
	etag: twinTag,
	params: twinParams,
	headers: ["if-match"],
	async run({ params, headers }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		const write = writeOf(ctx, twin, headers["if-match"]);
		const written = await markTerminated(dbFor(ctx, twin.uuid), write, now(), markIn(ctx.env, ctx.line, twin.uuid));
		if ("row" in written) return written.row;
		throw refusal(written.current, write);
	},
});

// A scan page examines at most this many twins.
const MAX_SCAN_COUNT = 1000;

export const scanTwins = defineOperation({
	name: "scan_twins",
	summary: "Page through the caller's account's twins: uuids, or details of the visible ones",
	description:
		"Pages through every twin of the caller's account, count at a time: uuids, or with details=true the records of those the caller can see. match filters with a rule over each twin; pass the answered cursor for the next page until it is null.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	response: z.object({
		cursor: z.nullable(z.string()),
		twins: z.array(z.union([uuidOut, twinRecord])).check(z.maxLength(MAX_SCAN_COUNT)),
	}),
	query: z.strictObject({
		cursor: z.optional(z.string().check(z.minLength(1), z.maxLength(64))),
		count: z._default(z.optional(pageLimit(MAX_SCAN_COUNT)), 100),
		match: z.optional(ruleText),
		details: z._default(z.optional(queryBoolean), false),
	}),
	checksCredential: true,
	async run({ query }, ctx) {
		const { cursor, ...request } = query;
		const bookmark = ctx.meter.latestBookmark(homeOf(ctx.env, ctx.claim.caller.account));
		const answer = await accountClient(ctx, ctx.claim.caller.account).scan(ctx.claim, cursor, request, bookmark);
		if (answer.stale) throw new StaleGuess();
		return new JsonText(answer.page);
	},
});

import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { isRecipient, MAX_STICKER_SECONDS, stickerRecord } from "../account/sticker-writes";
import { findSticker, type Listed, stickersAddressedTo, stickersOnTwin } from "../db/stickers";
import { findTwins } from "../db/twins";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { isVisible } from "../rules/visibility";
import { Budget, WORK_UNITS } from "../rules/strings";
import { type Context, defineOperation } from "./operation";
import { pageLimit } from "./paging";
import { context as accountsContext } from "./resolve";
import { mapOf, queryTimestamp, timestamp, timestampOut, topic, uuid, uuidOut } from "./schemas";
import { visibleTwin } from "./twins";
import { dbOf } from "../db/client";
import { groupByHome } from "../db/shards";

// Stickers: coloured markers an account puts on a twin for its recipients (users, roles or
// accounts). A sticker is visible to a recipient that sees its twin; get_sticker shows the
// caller's own account's stickers to any of its users. A sticker past its validity_ts is
// absent to every read and write, even before the account's alarm removes it.

const COLOR = /^[0-9A-Za-z-]{3,48}$/;
const color = z.string().check(z.regex(COLOR, "Must be 3 to 48 letters, digits or '-'"));
const MAX_COLORS = 10;
const MAX_RECIPIENTS = 100;
const MAX_NOTE = 512;
const MAX_EVENT_TOPICS = 10;
// get_stickers answers at most this many, newest first; list_stickers pages up to this far.
const MAX_STICKERS_ANSWERED = 1000;
const MAX_LIST_LIMIT = 100;

// A uuid in any case, answered and stored lowercased.
const recipient = z.pipe(
	z.pipe(
		z.string(),
		z.transform((text) => text.toLowerCase()),
	),
	uuid,
);

// One topic or a list of them, kept as a list in the order given, without repeats.
const topics = z.pipe(
	z.union([topic, z.array(topic).check(z.maxLength(MAX_EVENT_TOPICS, `At most ${MAX_EVENT_TOPICS} topics`))]),
	z.transform((t) => [...new Set(Array.isArray(t) ? t : [t])]),
);

const stickerIn = z.strictObject({
	note: z._default(
		z.optional(z.nullable(z.string().check(z.maxLength(MAX_NOTE, `Must be at most ${MAX_NOTE} characters`)))),
		null,
	),
	recipients: z.pipe(
		z
			.array(recipient)
			.check(
				z.minLength(1, "Must name 1 to 100 recipients"),
				z.maxLength(MAX_RECIPIENTS, "Must name 1 to 100 recipients"),
			),
		z.transform((list) => [...new Set(list)]),
	),
	validity_ts: z.optional(timestamp),
	publish: z._default(
		z.optional(
			z.strictObject({ on_put: z.optional(topics), on_remove: z.optional(topics), on_expire: z.optional(topics) }),
		),
		{},
	),
});

const stickersIn = z.record(color, stickerIn).check(
	z.superRefine((stickers, ctx) => {
		const count = Object.keys(stickers).length;
		if (count < 1 || count > MAX_COLORS)
			ctx.addIssue({ code: "custom", message: `Must hold 1 to ${MAX_COLORS} colors` });
		const at = now();
		for (const [key, sticker] of Object.entries(stickers)) {
			const v = sticker.validity_ts;
			if (v !== undefined && (v <= at || v > at + MAX_STICKER_SECONDS)) {
				ctx.addIssue({
					code: "custom",
					path: [key, "validity_ts"],
					message: `Must be after now and at most ${MAX_STICKER_SECONDS} seconds from now`,
				});
			}
		}
	}),
);

const topicsOut = z.optional(z.array(z.string()).check(z.maxLength(MAX_EVENT_TOPICS)));
const publishOut = z.object({ on_put: topicsOut, on_remove: topicsOut, on_expire: topicsOut });
const stickerOut = z.object({
	note: z.nullable(z.string()),
	recipients: z.array(uuidOut).check(z.maxLength(MAX_RECIPIENTS)),
	validity_ts: timestampOut,
	created_ts: timestampOut,
	publish: publishOut,
});
const summaryOut = z.object({ note: z.nullable(z.string()), validity_ts: timestampOut, created_ts: timestampOut });

const twinParams = z.strictObject({ twin: uuid });
const stickerParams = z.strictObject({ twin: uuid, color });

// The twin the path names, if the caller sees it, read in its owner's database (its uuid names
// it): stickers go on any account's twin the caller sees.
const stickerTwin = (params: { twin: string }, ctx: Context & { caller: Caller }) =>
	visibleTwin({ ...ctx, d1: ctx.shards.for(params.twin) }, ctx.caller, params.twin);

// The uuids a sticker may address the caller by.
const addressesOf = (caller: Caller) => [caller.user, caller.role, caller.account];

export const putSticker = defineOperation({
	name: "put_sticker",
	summary: "Put stickers of the caller's account on a twin it can see, for their recipients",
	description:
		"Puts stickers (by color) of the caller's account on a twin it can see, each for its recipients (users, roles or accounts) until validity_ts, optionally publishing put, remove and expiry to topics. All or none; a color the account already has on the twin is 409101.",
	refuses: ["not_found", "conflict", "sticker_limit"],
	example: { stickers: { red: { note: "inspect this", recipients: ["6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b"] } } },
	auth: "secret",
	params: twinParams,
	locate: stickerTwin,
	body: z.strictObject({ stickers: stickersIn }),
	status: 201,
	response: z.object({ stickers: mapOf(stickerOut, MAX_COLORS) }),
	async run({ located: twin, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).putStickers(ctx.caller, twin.uuid, body.stickers, ctx.line);
	},
});

export const getSticker = defineOperation({
	name: "get_sticker",
	summary: "A sticker the caller's account put on a twin the caller can see",
	description:
		"A sticker the caller's account put on a twin the caller can see, with its recipients. The twin must be one the caller can see (404102 otherwise).",
	refuses: ["not_found"],
	auth: "secret",
	params: stickerParams,
	locate: stickerTwin,
	response: stickerOut,
	async run({ located: twin, params }, ctx) {
		const at = now();
		const row = await ctx.meter.sightedOne(
			() => findSticker(dbOf(ctx), { twin: twin.uuid, account: ctx.caller.account, color: params.color }),
			(r) => r.validity_ts > at,
		);
		if (!row) throw new ApiError("not_found", { description: "No such sticker" });
		return stickerRecord(row);
	},
});

export const getStickers = defineOperation({
	name: "get_stickers",
	summary:
		"The stickers on a twin the caller can see that the context's accounts addressed to the caller, newest first",
	description:
		"The unexpired stickers on a twin the caller can see that the context's accounts addressed to the caller (its user, role or account), by account and color, newest first.",
	refuses: ["not_found"],
	auth: "secret",
	params: twinParams,
	locate: stickerTwin,
	query: z.strictObject({ context: z._default(z.optional(accountsContext), "system") }),
	response: z.object({ accounts: mapOf(mapOf(summaryOut, MAX_STICKERS_ANSWERED), MAX_STICKERS_ANSWERED) }),
	async run({ located: twin, query }, ctx) {
		const at = now();
		const from =
			query.context === "system" ? null : query.context === "personal" ? [ctx.caller.account] : query.context;
		// A sticker addressed to the caller's user and its role comes once per address; each
		// answered one costs its recipient entry, whatever else was read. Every address of the
		// caller is in its own database, with the copies of other databases' stickers
		// (docs/stickers.md "Across databases").
		const rows = await ctx.meter.sighted(
			() => stickersOnTwin(ctx.d1, twin.uuid, addressesOf(ctx.caller), from, at, MAX_STICKERS_ANSWERED),
			() => true,
		);
		const accounts: Record<string, Record<string, unknown>> = {};
		let answered = 0;
		for (const row of rows) {
			if (accounts[row.account] && Object.hasOwn(accounts[row.account], row.color)) continue;
			if (answered === MAX_STICKERS_ANSWERED) break;
			answered++;
			accounts[row.account] ??= {};
			accounts[row.account]![row.color] = {
				note: row.note,
				validity_ts: row.validity_ts,
				created_ts: row.created_ts,
			};
		}
		return { accounts };
	},
});

export const removeSticker = defineOperation({
	name: "remove_sticker",
	summary: "Remove a sticker addressed to the caller from a twin the caller can see",
	description:
		"Removes a sticker addressed to the caller, by the account of context (default its own), from a twin the caller can see; answers it as it was.",
	refuses: ["not_found"],
	auth: "secret",
	params: stickerParams,
	locate: stickerTwin,
	query: z.strictObject({ context: z._default(z.optional(z.union([z.literal("personal"), uuid])), "personal") }),
	response: z.object({
		account: uuidOut,
		note: z.nullable(z.string()),
		validity_ts: timestampOut,
		created_ts: timestampOut,
	}),
	async run({ located: twin, params, query }, ctx) {
		const account = query.context === "personal" ? ctx.caller.account : query.context;
		const key = { twin: twin.uuid, account, color: params.color };
		// Only a recipient reaches the sticker's account's object (which checks again, serialized
		// with its writes): anyone else, naming any account, cannot queue work there. The lookup,
		// in the database of the account named, costs a non-recipient what an absent sticker does.
		const at = now();
		const found = await ctx.meter.sightedOne(
			() => findSticker(dbOf({ d1: ctx.shards.for(account) }), key),
			(row) => row.validity_ts > at && isRecipient(ctx.caller, row),
		);
		if (!found) throw new ApiError("not_found", { description: "No such sticker" });
		return accountClient(ctx, account).removeSticker(ctx.caller, key, ctx.line);
	},
});

const listQuery = z
	.strictObject({
		color: z.optional(color),
		context: z._default(z.optional(z.union([z.enum(["personal", "system"]), uuid])), "personal"),
		ge: z.optional(queryTimestamp),
		le: z.optional(queryTimestamp),
		limit: z._default(z.optional(pageLimit(MAX_LIST_LIMIT)), MAX_LIST_LIMIT),
		offset: z._default(z.optional(offsetIn(MAX_STICKERS_ANSWERED - 1)), 0),
	})
	.check(
		z.refine((q) => q.ge === undefined || q.le === undefined || q.ge <= q.le, {
			message: "ge must not be after le",
			path: ["ge"],
		}),
		z.refine((q) => q.offset + q.limit <= MAX_STICKERS_ANSWERED, {
			message: `offset + limit must be at most ${MAX_STICKERS_ANSWERED}; go further with le`,
			path: ["offset"],
		}),
	);

// Query `offset`: an integer from 0 to `max`.
function offsetIn(max: number) {
	const message = `Must be an integer from 0 to ${max}`;
	return z.pipe(
		z.pipe(z.string().check(z.regex(/^\d{1,4}$/, message)), z.transform(Number)),
		z.number().check(z.int(), z.lte(max, message)),
	);
}

// Twins of any account, each read in its owner's database, which its uuid names. Every database
// is asked, with the twins it holds (none is a query too), so that what a page costs, and the
// databases x-d1-bookmark names, tell nothing of where a hidden twin lives.
async function twinsWhereTheyLive(ctx: Context, uuids: string[]) {
	const byHome = groupByHome(ctx.env, new Set(uuids));
	const found = await Promise.all(
		ctx.shards.all().map((binding) => findTwins(dbOf({ d1: ctx.shards.of(binding) }), byHome.get(binding) ?? [])),
	);
	return found.flat();
}

// Descending (created_ts, account, twin, color): the order list_stickers answers in.
function newestFirst(a: Listed, b: Listed): number {
	if (a.created_ts !== b.created_ts) return b.created_ts - a.created_ts;
	for (const key of ["account", "twin", "color"] as const) if (a[key] !== b[key]) return a[key] < b[key] ? 1 : -1;
	return 0;
}

export const listStickers = defineOperation({
	name: "list_stickers",
	summary:
		"Stickers addressed to the caller across twins, newest first; those on twins it cannot see are left out after the limit",
	description:
		"Stickers addressed to the caller across twins, newest first, filtered by color, putting account and creation time; offset and limit page them. Those on twins the caller cannot see are left out after the limit is applied.",
	auth: "secret",
	query: listQuery,
	response: z.object({
		stickers: z
			.array(
				z.object({
					twin: uuidOut,
					account: uuidOut,
					color: z.string(),
					note: z.nullable(z.string()),
					validity_ts: timestampOut,
					created_ts: timestampOut,
				}),
			)
			.check(z.maxLength(MAX_LIST_LIMIT)),
	}),
	async run({ query }, ctx) {
		const caller = ctx.caller;
		const at = now();
		const account =
			query.context === "personal" ? caller.account : query.context === "system" ? undefined : query.context;
		const filter = { color: query.color, account, ge: query.ge, le: query.le, at };
		const reach = query.offset + query.limit;
		const budget = new Budget(WORK_UNITS);
		// One index range per address, in the caller's database; merged, each sticker once.
		// Server-Timing counts each answered sticker (its recipient entry and its twin's), not
		// the twins the caller cannot see, and the twins' reads, one per database.
		const page = await ctx.meter.sighted(
			async () => {
				const lists = await Promise.all(
					addressesOf(caller).map((address) => stickersAddressedTo(dbOf(ctx), address, filter, reach)),
				);
				const seen = new Set<string>();
				const merged = lists
					.flat()
					.sort(newestFirst)
					.filter((row) => {
						const key = `${row.account}/${row.twin}/${row.color}`;
						return !seen.has(key) && Boolean(seen.add(key));
					})
					.slice(query.offset, reach);
				const uuids = merged.map((row) => row.twin);
				const found = await twinsWhereTheyLive(ctx, uuids);
				const twins = new Map(found.map((twin) => [twin.uuid, twin]));
				return merged.map((row) => ({ row, twin: twins.get(row.twin) }));
			},
			({ twin }) => twin !== undefined && isVisible(caller, twin, at, budget),
			2,
		);
		return {
			stickers: page.map(({ row }) => ({
				twin: row.twin,
				account: row.account,
				color: row.color,
				note: row.note,
				validity_ts: row.validity_ts,
				created_ts: row.created_ts,
			})),
		};
	},
});

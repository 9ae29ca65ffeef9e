import * as z from "zod/mini";
import { findOwnIdentity, type IdentityRow, listOwnIdentities, listPublicIdentities } from "../db/identities";
import type { TwinRow } from "../db/twins";
import { identityRecord, MAX_IDENTITIES_PER_TWIN } from "../account/identity-writes";
import { accountClient } from "../account/client";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { Budget, WORK_UNITS } from "../rules/strings";
import { canSeeIdentity, isExpired } from "../rules/identities";
import { now } from "../base/time";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { decodedOnce, mapOf, queryBoolean, ruleText, timestamp, timestampOut, uuid, uuidOut } from "./schemas";
import { twinView, visibleTwin } from "./twins";
import { dbFor, dbOf } from "../db/client";
import { holdersOf } from "../db/directory";
import { homeOf } from "../db/shards";

const IDENTITY = /^[A-Za-z_][0-9A-Za-z_]{0,7}#[0-9A-Za-z_=+-]{1,128}$/;

const IDENTITY_FORM =
	"a prefix of 1 to 8 letters, digits or '_' (not a digit first), '#', then 1 to 128 letters, digits, '_', '=', '+' or '-' (^[A-Za-z_][0-9A-Za-z_]{0,7}#[0-9A-Za-z_=+-]{1,128}$)";

export const identityName = z.string().check(z.regex(IDENTITY, `Must be ${IDENTITY_FORM}`));

// In a path the identity is percent-encoded ('#' travels as %23) and decoded exactly once. A
// raw '#' starts the URL's fragment, which never reaches the service: the message says so.
export const identityParam = decodedOnce(
	z.string().check(z.regex(IDENTITY, `Must be ${IDENTITY_FORM}; in a path write '#' as %23`)),
);

// create_twin_identity takes, and answers, at most this many at once.
const MAX_IDENTITIES_PER_REQUEST = 100;

const settings = { validity_ts: z.optional(z.nullable(timestamp)), visibility: z.optional(z.nullable(ruleText)) };

const identityOut = z.object({
	validity_ts: z.nullable(timestampOut),
	visibility: z.nullable(z.string()),
	updated_ts: timestampOut,
	creation_certificate: z.object({ identity: z.string(), creator: uuidOut, created_ts: timestampOut }),
});
const listedOut = z.object({
	validity_ts: z.nullable(timestampOut),
	created_ts: timestampOut,
	updated_ts: timestampOut,
});

const twinParams = z.strictObject({ twin: uuid });
const itemParams = z.strictObject({ twin: uuid, identity: identityParam });

// One of the caller's account's identities on a twin the caller sees, or 404 whether it is
// absent or hidden by the caller's identity rule.
async function visibleOwnIdentity(ctx: Context & { caller: Caller }, twinId: string, identity: string) {
	const twin = await visibleTwin(ctx, ctx.caller, twinId);
	const at = now();
	const row = await ctx.meter.sightedOne(
		() => findOwnIdentity(dbOf(ctx), twin.uuid, ctx.caller.account, identity),
		(r) => canSeeIdentity(ctx.caller, r, twin, at),
	);
	if (!row) throw new ApiError("not_found", { description: "No such identity" });
	return { twin, row };
}

export const createTwinIdentity = defineOperation({
	name: "create_twin_identity",
	summary: "Attach identities of the caller's account to a twin it can see, alive or terminated",
	description:
		"Attaches identities (`<kind>#<value>`) of the caller's account to a twin it can see, alive or terminated, each with an optional validity and a visibility rule for other accounts. An identity the caller's role would not see is refused; all or none are attached.",
	refuses: ["not_found", "escalation", "conflict"],
	example: { identities: { "RFID#4b2a9f": { validity_ts: null, visibility: "USER.partner == true" } } },
	auth: "secret",
	params: twinParams,
	body: z.strictObject({
		identities: z
			.record(identityName, z.strictObject(settings))
			.check(
				z.refine(
					(ids) => Object.keys(ids).length >= 1 && Object.keys(ids).length <= MAX_IDENTITIES_PER_REQUEST,
					`Must hold 1 to ${MAX_IDENTITIES_PER_REQUEST} identities`,
				),
			),
	}),
	status: 201,
	response: z.object({ identities: mapOf(identityOut, MAX_IDENTITIES_PER_REQUEST) }),
	async run({ params, body }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		return accountClient(ctx, ctx.caller.account).createIdentities(
			ctx.caller,
			twinView(twin),
			body.identities,
			ctx.line,
		);
	},
});

const listed = (row: { validity_ts: number | null; created_ts: number; updated_ts: number }) => ({
	validity_ts: row.validity_ts,
	created_ts: row.created_ts,
	updated_ts: row.updated_ts,
});

export const getTwinIdentities = defineOperation({
	name: "get_twin_identities",
	summary:
		"The identities of a twin the caller can see: its account's, and with show_foreign other accounts' visible ones",
	description:
		"The identities on a twin the caller can see: its account's own (filtered by the show_ flags), and with show_foreign (true or an account uuid) other accounts' that the caller's identity rule and their visibility allow.",
	refuses: ["not_found"],
	auth: "secret",
	params: twinParams,
	query: z.strictObject({
		show_personal: z._default(z.optional(queryBoolean), true),
		show_foreign: z._default(z.optional(z.union([queryBoolean, uuid])), false),
		show_expired: z._default(z.optional(queryBoolean), false),
		show_valid: z._default(z.optional(queryBoolean), true),
		show_public: z._default(z.optional(queryBoolean), true),
		show_private: z._default(z.optional(queryBoolean), true),
	}),
	// At most MAX_IDENTITIES_PER_TWIN of the account's own, and as many other accounts' examined.
	response: z.object({
		identities: mapOf(listedOut, MAX_IDENTITIES_PER_TWIN),
		foreign: z.optional(mapOf(mapOf(listedOut, MAX_IDENTITIES_PER_TWIN), MAX_IDENTITIES_PER_TWIN)),
	}),
	async run({ params, query }, ctx) {
		const twin = await visibleTwin(ctx, ctx.caller, params.twin);
		const reader = ctx.caller;
		const at = now();
		// Every rule the lists evaluate, over up to twice MAX_IDENTITIES_PER_TWIN rows, shares one budget.
		const budget = new Budget(WORK_UNITS);
		const answer: { identities: Record<string, unknown>; foreign?: Record<string, Record<string, unknown>> } = {
			identities: {},
		};
		if (query.show_personal) {
			// The identities the reader's role hides cost nothing, as if absent.
			const rows = await ctx.meter.sighted(
				() => listOwnIdentities(dbOf(ctx), twin.uuid, reader.account),
				(r) => canSeeIdentity(reader, r, twin, at, budget),
			);
			for (const row of rows) {
				if (isExpired(row, at) ? !query.show_expired : !query.show_valid) continue;
				if (row.visibility === null ? !query.show_private : !query.show_public) continue;
				answer.identities[row.identity] = listed(row);
			}
		}
		if (query.show_foreign !== false)
			answer.foreign = await foreignOf(ctx, twin, query.show_foreign === true ? null : query.show_foreign, budget);
		return answer;
	},
});

// Without an identity rule a role sees no other account's identity, so nothing is read.
async function foreignOf(ctx: Context & { caller: Caller }, twin: TwinRow, only: string | null, budget: Budget) {
	const reader = ctx.caller;
	const foreign: Record<string, Record<string, unknown>> = {};
	if (reader.rules.identity === null || only === reader.account) return foreign;
	const at = now();
	// Bounded like a personal list; the order is fixed, so the same rows come back each time.
	// The rows it may not see cost nothing in Server-Timing, as if they were absent.
	const sees = (row: IdentityRow) => row.account !== reader.account && canSeeIdentity(reader, row, twin, at, budget);
	// Each account's identities are in its own database: one account's, or those of the accounts
	// the twin's owner lists as holding public identities on it, and the owner's own, merged in
	// the order one database would give them. The databases asked for the holders are read
	// aside: the request counts those that gave what the caller sees (Sessions.aside).
	const read = async () => {
		if (only !== null) return listPublicIdentities(dbFor(ctx, only), twin.uuid, only, MAX_IDENTITIES_PER_TWIN);
		const holders = await holdersOf(dbFor(ctx, twin.uuid), twin.uuid, MAX_IDENTITIES_PER_TWIN);
		const bindings = new Set([twin.uuid, ...holders].map((id) => homeOf(ctx.env, id)));
		const lists = await Promise.all(
			[...bindings].map((binding) =>
				listPublicIdentities(
					dbOf({ d1: ctx.shards.aside("identities", binding) }),
					twin.uuid,
					null,
					MAX_IDENTITIES_PER_TWIN,
				),
			),
		);
		const key = (row: IdentityRow) => `${row.account}/${row.identity}`;
		return lists
			.flat()
			.sort((x, y) => (key(x) < key(y) ? -1 : key(x) > key(y) ? 1 : 0))
			.slice(0, MAX_IDENTITIES_PER_TWIN);
	};
	const rows = await ctx.meter.sighted(read, sees);
	ctx.shards.reveal(
		"identities",
		rows.map((row) => homeOf(ctx.env, row.account)),
	);
	for (const row of rows) {
		foreign[row.account] ??= {};
		foreign[row.account]![row.identity] = listed(row);
	}
	return foreign;
}

export const getTwinIdentity = defineOperation({
	name: "get_twin_identity",
	summary: "One of the caller's account's identities on a twin",
	description:
		"One of the caller's account's identities on a twin it can see; one hidden by the caller's identity rule is 404 as if absent.",
	refuses: ["not_found"],
	auth: "secret",
	params: itemParams,
	response: identityOut,
	async run({ params }, ctx) {
		return identityRecord((await visibleOwnIdentity(ctx, params.twin, params.identity)).row);
	},
});

export const updateTwinIdentity = defineOperation({
	name: "update_twin_identity",
	summary: "Change the validity or visibility of one of the caller's account's identities",
	description: "Changes the validity or visibility of one of the caller's account's identities on a twin it can see.",
	refuses: ["not_found", "escalation"],
	example: { validity_ts: 4102444800 },
	auth: "secret",
	params: itemParams,
	body: z
		.strictObject(settings)
		.check(
			z.refine(
				(b) => b.validity_ts !== undefined || b.visibility !== undefined,
				"Give validity_ts, visibility or both",
			),
		),
	response: identityOut,
	async run({ params, body }, ctx) {
		const { twin } = await visibleOwnIdentity(ctx, params.twin, params.identity);
		return accountClient(ctx, ctx.caller.account).updateIdentity(
			ctx.caller,
			{ uuid: twin.uuid, owner: twin.owner },
			params.identity,
			body,
			ctx.line,
		);
	},
});

export const deleteTwinIdentity = defineOperation({
	name: "delete_twin_identity",
	summary: "Detach one of the caller's account's identities from a twin; answers it as it was",
	description: "Detaches one of the caller's account's identities from a twin it can see and answers it as it was.",
	refuses: ["not_found"],
	auth: "secret",
	params: itemParams,
	response: identityOut,
	async run({ params }, ctx) {
		const { twin } = await visibleOwnIdentity(ctx, params.twin, params.identity);
		return accountClient(ctx, ctx.caller.account).deleteIdentity(ctx.caller, twin.uuid, params.identity, ctx.line);
	},
});

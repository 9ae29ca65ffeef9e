import * as z from "zod/mini";
import {
	type AttachmentRow,
	foreignAttachments,
	ownAttachments,
	type ResolvedRow,
	resolvedTwins,
} from "../db/identities";
import { candidateAttachments, directoryCandidates } from "../db/directory";
import { bucketOfIdentity } from "../base/shards";
import { readsRoot } from "../rules/ast";
import { canSeeIdentity, isExpired } from "../rules/identities";
import { ruleOf } from "../rules/stored";
import { isVisible } from "../rules/visibility";
import { Budget, WORK_UNITS } from "../rules/strings";
import { now } from "../base/time";
import type { Caller } from "../base/caller";
import { MAX_PAGE_BYTES } from "../account/scan";
import { cursorIn, cursorOut, openCursor, sealCursor } from "./paging";
import { identityParam } from "./identities";
import { type Context, defineOperation } from "./operation";
import { commaList, queryBoolean, twinRecord, uuid, uuidOut } from "./schemas";
import { MAX_DESCRIPTION_BYTES } from "../base/limits";
import { dbFor, dbOf } from "../db/client";
import { bindingOfBucket, groupByHome, homeOf } from "../db/shards";

// At most this many attachments are examined per page, and so at most this many twins answered.
export const MAX_RESOLVED = 1000;
// A page that reads descriptions (up to 32 KiB each, with their certificates) stays under
// MAX_PAGE_BYTES by examining fewer attachments.
export const MAX_RESOLVED_DESCRIBED = Math.floor(MAX_PAGE_BYTES / (MAX_DESCRIPTION_BYTES + 1024));
const MAX_CONTEXT_ACCOUNTS = 10;

// `personal` (the caller's account), `system` (every account), or 1 to 10 account uuids.
export const context = z.union([z.enum(["personal", "system"]), commaList(uuid, MAX_CONTEXT_ACCOUNTS, "accounts")]);

function twinOf(row: ResolvedRow) {
	return {
		uuid: row.twin,
		owner: row.owner,
		status: row.status,
		updated_ts: row.twin_updated_ts,
		description: row.description === null ? null : JSON.parse(row.description),
		creation_certificate: row.creation_certificate === null ? null : JSON.parse(row.creation_certificate),
		termination_certificate: row.termination_certificate ? JSON.parse(row.termination_certificate) : null,
	};
}

// The scope a page's cursor holds for (see paging.ts): the caller and the whole query.
function cursorScope(caller: Caller, identity: string, query: { context: unknown; details: boolean }) {
	return `resolve_twin_identity/${caller.user}/${identity}/${JSON.stringify(query.context)}/${query.details}`;
}

const resolvePosition = z.tuple([z.enum(["own", "foreign"]), z.string(), z.string()]);

export const resolveTwinIdentity = defineOperation({
	name: "resolve_twin_identity",
	summary:
		"The twins an identity is attached to, by the context's accounts, as far as the caller may see the identity; paged",
	description:
		"The twins an identity (`%23` for its `#`) is attached to, by the accounts of context (personal, system, or account uuids), as far as the caller's identity rule and the identities' visibility allow; uuids, or twin records with details=true. Expired identities no longer resolve. Paged by cursor.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	params: z.strictObject({ identity: identityParam }),
	query: z.strictObject({
		context: z._default(z.optional(context), "personal"),
		details: z._default(z.optional(queryBoolean), false),
		cursor: z.optional(cursorIn),
	}),
	response: z.object({
		twins: z.array(z.union([uuidOut, twinRecord])).check(z.maxLength(MAX_RESOLVED)),
		cursor: cursorOut,
	}),
	async run({ params, query }, ctx) {
		const reader = ctx.caller;
		const me = reader.account;
		const accounts = query.context === "personal" ? [me] : query.context === "system" ? null : query.context;
		const own = accounts === null || accounts.includes(me) ? me : null;
		// A role without an identity rule sees no other account's identity: none is read.
		const others = accounts?.filter((account) => account !== me) ?? null;
		const foreign = reader.rules.identity !== null && others?.length !== 0 ? { only: others, except: me } : null;
		// Descriptions are read when the answer holds them or a rule may read them: the role's
		// identity rule, or the visibility rules of other accounts' identities.
		const descriptions = query.details || foreign !== null || readsRoot(ruleOf(reader.rules.identity), "TWIN");
		const limit = descriptions ? MAX_RESOLVED_DESCRIBED : MAX_RESOLVED;
		const scope = cursorScope(reader, params.identity, query);
		const position = await openCursor(ctx.env, scope, query.cursor, resolvePosition);
		const after: Position | null = position && { part: position[0], account: position[1], twin: position[2] };

		const at = now();
		// Every rule this page evaluates shares one budget.
		const budget = new Budget(WORK_UNITS);
		let page: Page = { examined: [], rows: [] };
		const read = async () => {
			page = await resolveIdentity(ctx, { identity: params.identity, own, foreign, descriptions }, after, limit);
			return page.rows;
		};
		// Expired identities no longer identify; the others as the reader's sight decides.
		const sees = (row: ResolvedRow) => !isExpired(row, at) && canSeeIdentity(reader, row, twinOf(row), at, budget);
		// Each attachment costs its index entry and its twin.
		const visible = await ctx.meter.sighted(read, sees, 2);
		// The databases read for what the caller sees count; those read only for what it may not see
		// do not, as if that were absent.
		ctx.shards.reveal(
			"identities",
			visible.filter((row) => row.aside).map((row) => homeOf(ctx.env, row.account)),
		);
		ctx.shards.reveal(
			"twins",
			visible.map((row) => homeOf(ctx.env, row.twin)),
		);

		const last = page.examined.at(-1);
		const cursor =
			page.examined.length < limit || !last
				? null
				: await sealCursor(ctx.env, scope, [last.part, last.account, last.twin]);
		const twins = new Map<string, ReturnType<typeof twinOf>>();
		for (const row of visible.sort((x, y) => (x.twin < y.twin ? -1 : x.twin > y.twin ? 1 : 0))) {
			if (!twins.has(row.twin)) twins.set(row.twin, twinOf(row));
		}
		// Without details every twin is named, even one the caller cannot see; with details
		// only the visible ones, as scan_twins shows them.
		if (!query.details) return { twins: [...twins.keys()], cursor };
		return { twins: [...twins.values()].filter((twin) => isVisible(ctx.caller, twin, at, budget)), cursor };
	},
});

type ResolveQuery = {
	identity: string;
	own: string | null;
	foreign: { only: string[] | null; except: string } | null;
	descriptions: boolean;
};

type Position = { part: "own" | "foreign"; account: string; twin: string };
const positionOf = (row: Position) => `${row.part === "own" ? 0 : 1}/${row.account}/${row.twin}`;
const inOrder = (x: Position, y: Position) =>
	positionOf(x) < positionOf(y) ? -1 : positionOf(x) > positionOf(y) ? 1 : 0;

// A page: the attachments it examined, in order (the cursor goes on after the last), and those
// found as they are now, with their twins. `aside`: found by a read of a database chosen by the
// directory, which counts for the request only for the rows the caller sees (Sessions.aside).
type Page = { examined: Position[]; rows: (ResolvedRow & { aside: boolean })[] };

// Up to `limit` attachments of one identity after `after`, with their twins: the `own`
// account's by twin, then, when `foreign` is given, other accounts' public ones (or the listed
// accounts') by account and twin. Each account's attachments are in its database and each twin
// in its owner's (docs/scaling.md): the own part reads its account's database, the foreign part
// the listed accounts' databases or, for every account, the directory of public identities in
// the database of the identity's hash, whose candidates are then read again where their
// accounts live (the directory may lag a change). Those reads, and the twins', ask only the
// databases holding candidates, aside: the request counts those that gave what the caller sees.
async function resolveIdentity(
	ctx: Context,
	query: ResolveQuery,
	after: Position | null,
	limit: number,
): Promise<Page> {
	const reads: Promise<Position[]>[] = [];
	const found: AttachmentRow[] = [];
	const keep = (rows: AttachmentRow[]) => {
		found.push(...rows);
		return rows;
	};
	if (query.own && after?.part !== "foreign")
		reads.push(ownAttachments(dbFor(ctx, query.own), query.identity, query.own, after?.twin ?? "", limit).then(keep));
	const { foreign } = query;
	const from = after?.part === "foreign" ? after : null;
	if (foreign?.only && foreign.only.length !== 0) {
		for (const binding of new Set(foreign.only.map((a) => homeOf(ctx.env, a))))
			reads.push(
				foreignAttachments(dbOf({ d1: ctx.shards.of(binding) }), query.identity, foreign.only, from, limit).then(keep),
			);
	} else if (foreign && foreign.only === null) {
		const directory = dbOf({ d1: ctx.shards.of(bindingOfBucket(ctx.env, await bucketOfIdentity(query.identity))) });
		reads.push(
			directoryCandidates(directory, query.identity, foreign.except, from, limit).then((rows) =>
				rows.map((row) => ({ ...row, part: "foreign" as const })),
			),
		);
	}
	const examined = (await Promise.all(reads)).flat().sort(inOrder).slice(0, limit);
	// What the directory named, not yet read where its account lives.
	const known = new Set(found.map(positionOf));
	const candidates = examined.filter((position) => !known.has(positionOf(position)));
	const again = await Promise.all(
		[...groupBy(candidates, (c) => homeOf(ctx.env, c.account))].map(([binding, list]) =>
			candidateAttachments(dbOf({ d1: ctx.shards.aside("identities", binding) }), query.identity, list),
		),
	);
	const inPage = new Set(examined.map(positionOf));
	const attachments = [
		...found.filter((row) => inPage.has(positionOf(row))).map((row) => ({ ...row, aside: false })),
		...again.flat().map((row) => ({ ...row, aside: true })),
	];
	const twins = await Promise.all(
		[...groupByHome(ctx.env, new Set(attachments.map((row) => row.twin)))].map(([binding, uuids]) =>
			resolvedTwins(dbOf({ d1: ctx.shards.aside("twins", binding) }), uuids, query.descriptions),
		),
	);
	const byUuid = new Map(twins.flat().map((twin) => [twin.uuid, twin]));
	// Twins are never deleted: every attachment finds its twin.
	const rows = attachments.sort(inOrder).flatMap((row) => {
		const twin = byUuid.get(row.twin);
		if (!twin) return [];
		const { owner, status, description, creation_certificate, termination_certificate } = twin;
		return [
			{
				...row,
				owner,
				status,
				description,
				creation_certificate,
				termination_certificate,
				twin_updated_ts: twin.updated_ts,
			},
		];
	});
	return { examined, rows };
}

function groupBy<T>(items: T[], keyOf: (item: T) => string): Map<string, T[]> {
	const groups = new Map<string, T[]>();
	for (const item of items) groups.set(keyOf(item), [...(groups.get(keyOf(item)) ?? []), item]);
	return groups;
}

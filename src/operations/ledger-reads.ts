import * as z from "zod/mini";
import { type HistoryPosition, readHistory, readLedger } from "../db/ledgers";
import { MAX_PAGE_BYTES } from "../account/scan";
import { openCursor, sealCursor } from "./paging";
import { type StoredEntry, entryOut, storedOf, valueOut } from "../account/ledger-view";
import type { Caller } from "../base/caller";
import { EntrySight } from "../rules/entries";
import { now } from "../base/time";
import {
	entryList,
	historyEntries,
	historyQuery,
	ledgerParams,
	NOT_ACCESSIBLE,
	readEntries,
	valueEntries,
} from "./ledger-schemas";
import type { Context } from "./operation";
import { defineOperation } from "./operation";
import { queryBoolean } from "./schemas";
import { twinView, visibleTwin } from "./twins";
import { dbFor } from "../db/client";

// Reads of any ledger on a twin the caller sees. The whole ledger (at most 64 KiB) is read
// and filtered here, so which names a request asks for changes nothing of what it costs, and
// Server-Timing counts only the entries the caller sees (D1Meter.sighted): an entry it may not
// see looks, and costs, like an absent one.

type Params = z.infer<typeof ledgerParams>;

async function visibleEntries(ctx: Context & { caller: Caller }, params: Params, names: string[] | undefined) {
	const twin = await visibleTwin(ctx, ctx.caller, params.twin);
	const ledger = ledgerAccount(params.ledger, ctx.caller, twin);
	// The sight is made from the whole ledger: the owner's visibility rules read every entry.
	let sight!: EntrySight;
	const visible = await ctx.meter.sighted(
		async () => {
			// The ledger's rows are in its account's database.
			const all = (await readLedger(dbFor(ctx, ledger), twin.uuid, ledger)).map(storedOf);
			sight = new EntrySight(
				ctx.caller,
				twinView(twin),
				ledger,
				new Map(all.map((entry) => [entry.name, entry])),
				now(),
			);
			return all;
		},
		(entry) => sight.shows(entry),
	);
	const seen = new Map(visible.map((entry) => [entry.name, entry]));
	const entries = names ? names.map((name) => seen.get(name)).filter((e) => e !== undefined) : [...seen.values()];
	return { twin, ledger, sight, entries };
}

function ledgerAccount(
	ledger: Params["ledger"],
	caller: Caller,
	twin: { owner: string; creation_certificate: Record<string, unknown> },
) {
	if (ledger === "personal") return caller.account;
	if (ledger === "owner") return twin.owner;
	if (ledger === "creator") return String(twin.creation_certificate.creator);
	return ledger;
}

export const getTwinLedgerEntry = defineOperation({
	name: "get_twin_ledger_entry",
	summary: "Entries of a ledger on a twin that the caller may see",
	description:
		"The entries of a ledger (personal, owner, creator or an account uuid) on a twin the caller can see that the caller may see: on its own account's ledger by its role's entry rule, on another's by that rule and the entry's visibility. Its own account's users get each entry's configuration too.",
	refuses: ["not_found"],
	auth: "secret",
	response: readEntries,
	params: ledgerParams,
	query: z.strictObject({
		entries: z.optional(entryList),
		show_public: z._default(z.optional(queryBoolean), true),
		show_private: z._default(z.optional(queryBoolean), true),
		show_references: z.optional(queryBoolean),
	}),
	async run({ params, query }, ctx) {
		const { sight, entries } = await visibleEntries(ctx, params, query.entries);
		// On the caller's own ledger, entries can be filtered by being public or private.
		const shown = entries.filter((e) => !sight.own || (e.visibility === null ? query.show_private : query.show_public));
		const shape = sight.own ? (e: StoredEntry) => entryOut(e) : valueOut;
		return { entries: Object.fromEntries(shown.map((e) => [e.name, shape(e)])) };
	},
});

export const getTwinLedgerEntryValue = defineOperation({
	name: "get_twin_ledger_entry_value",
	summary: "Values of entries of a ledger on a twin that the caller may see",
	description:
		"The values of the entries of a ledger on a twin the caller can see that the caller may see, as get_twin_ledger_entry decides.",
	refuses: ["not_found"],
	auth: "secret",
	response: valueEntries,
	params: ledgerParams,
	query: z.strictObject({ entries: z.optional(entryList) }),
	async run({ params, query }, ctx) {
		const { entries } = await visibleEntries(ctx, params, query.entries);
		return { entries: Object.fromEntries(entries.map((e) => [e.name, valueOut(e)])) };
	},
});

// A history page's values stay this far under MAX_PAGE_BYTES, which leaves room for the
// timestamps and names that key them (at most 100 x 100 records of about 30 bytes each).
const HISTORY_PAGE_BYTES = MAX_PAGE_BYTES - 1024 * 1024;
// With at most `limit` (100) records each: a page reads at most about 20,000 index entries.
const HISTORY_NAMES_PER_PAGE = 100;

// The scope a page's cursor holds for (see paging.ts): the caller, the ledger and the query.
function historyScope(caller: Caller, twin: string, ledger: string, query: z.infer<typeof historyQuery>) {
	return `get_twin_ledger_entry_history/${caller.user}/${twin}/${ledger}/${JSON.stringify([query.entries ?? null, query.ge ?? null, query.le ?? null, query.limit])}`;
}

// An entry and a record's timestamp (-1: past all of the entry's records).
const historyPosition = z.tuple([z.string(), z.number()]);

export const getTwinLedgerEntryHistory = defineOperation({
	name: "get_twin_ledger_entry_history",
	summary: "Past values, newest first, of entries of a ledger on a twin that keep history; paged under 4 MiB",
	description:
		'Past values, newest first, of the entries that keep history on a ledger of a twin the caller can see, between ge and le, limit per entry; paged by cursor. A name absent, hidden or without history answers "Entry not accessible."',
	refuses: ["not_found", "invalid_cursor"],
	auth: "secret",
	response: historyEntries,
	params: ledgerParams,
	query: historyQuery,
	async run({ params, query }, ctx) {
		const { twin, ledger, entries } = await visibleEntries(ctx, params, query.entries);
		const scope = historyScope(ctx.caller, twin.uuid, ledger, query);
		const position = await openCursor(ctx.env, scope, query.cursor, historyPosition);
		const after: HistoryPosition | null = position && { name: position[0], ts: position[1] };
		// In the order the index keeps names, as pages walk them.
		const kept = entries
			.filter((e) => e.history !== null)
			.map((e) => e.name)
			.sort();
		// A page reads the records of at most HISTORY_NAMES_PER_PAGE entries, from where the last stopped.
		const from = after ? kept.filter((name) => name >= after.name) : kept;
		const names = from.slice(0, HISTORY_NAMES_PER_PAGE);
		const range = { ge: query.ge ?? 0, le: query.le ?? Number.MAX_SAFE_INTEGER, limit: query.limit };
		// Server-Timing counts the records answered: the index steps around the ranges read
		// would count the records of entries the caller may not see.
		let more = false;
		const rows = await ctx.meter.sighted(
			async () => {
				const page = await readHistory(
					dbFor(ctx, ledger),
					{ twin: twin.uuid, account: ledger, names },
					range,
					after,
					HISTORY_PAGE_BYTES,
				);
				more = page.more;
				return page.rows;
			},
			() => true,
		);
		const answer: Record<string, Record<string, unknown> | typeof NOT_ACCESSIBLE> = {};
		// One text for absent, hidden and history-less names: none of them says which it is.
		const keeps = new Set(kept);
		for (const name of query.entries ?? []) if (!keeps.has(name)) answer[name] = NOT_ACCESSIBLE;
		// The first page names every entry that keeps history; later ones those they continue.
		if (!after) for (const name of kept) answer[name] = {};
		for (const row of rows) {
			// Not `??=`: for an entry named "constructor" it would find Object.prototype's and write there.
			if (!Object.hasOwn(answer, row.name)) answer[row.name] = {};
			const records = answer[row.name];
			(records as Record<string, unknown>)[String(row.ts)] = JSON.parse(row.value);
		}
		// Past a page cut short, the next starts after its last record; past a page that ended
		// its entries, after every record (timestamps are never negative) of its last one.
		const last = more ? rows.at(-1) : from.length > names.length ? { name: names.at(-1), ts: -1 } : undefined;
		const cursor = last ? await sealCursor(ctx.env, scope, [last.name, last.ts]) : null;
		return { entries: answer, cursor };
	},
});

import * as z from "zod/mini";
import type { EntryChange, EntryPatch, LedgerAction } from "../account/ledger-writes";
import type { LedgerRequest } from "../account/ledger-groups";
import { accountClient } from "../account/client";
import type { Caller, Claim } from "../base/caller";
import type { Json } from "../rules/ast";
import type { Context } from "./operation";
import { defineOperation, StaleGuess } from "./operation";
import {
	addBody,
	deleteBody,
	entryList,
	ledgerParams,
	mergeBody,
	ownEntries,
	updateBody,
	updateValueBody,
} from "./ledger-schemas";

// The writes of a ledger: only the caller's own (`personal` or its account uuid), on any twin
// the caller sees, alive or terminated. They run in the account's object, one at a time.

type Params = z.infer<typeof ledgerParams>;

type Request = { action: LedgerAction } & (
	| { kind: "add" | "update"; entries: Record<string, EntryChange>; conditions?: Record<string, string> }
	| { kind: "merge"; entries: Record<string, EntryPatch>; conditions?: Record<string, string> }
	| { kind: "delete"; names: string[] | null; conditions?: Record<string, string> }
);

// The account's object checks the rest in its own order (account/ledger-groups.ts): the writer
// (the secret itself, for a guess or any caller of a secret), its permission, the twin (one
// the caller may not see is 404102 as if absent), that the ledger is the caller's own (403103),
// then the write. The Worker reads nothing for a write: the object keeps or reads it all.
async function send(ctx: Context & { caller: Caller; claim: Claim }, params: Params, request: Request) {
	const { caller, claim } = ctx;
	const binding = caller.credential?.binding;
	const hash = claim.hash ?? (binding?.kind === "secret" ? binding.hash : undefined);
	const write = {
		...request,
		twin: params.twin,
		ledger: params.ledger,
		writer: caller,
		conditions: request.conditions ?? {},
		...(hash === undefined ? {} : { hash }),
		...(claim.hash === undefined ? {} : { guessed: true as const }),
		...(ctx.line === undefined ? {} : { mark: ctx.line }),
	} as LedgerRequest;
	const answer = await accountClient(ctx, caller.account).writeLedger(write);
	if (answer.stale) throw new StaleGuess();
	return { entries: answer.entries };
}

export const addTwinLedgerEntry = defineOperation({
	name: "add_twin_ledger_entry",
	summary: "Add entries to the caller's ledger on a twin",
	description:
		"Adds entries to the caller's own ledger (personal or its account uuid) on a twin it can see, alive or terminated, all or none, after the conditions hold. Each entry has a value and optional visibility rule, history and publish topics. Another account's ledger is 403103.",
	refuses: ["not_found", "not_owner", "escalation", "conflict", "condition_failed", "ledger_too_large"],
	example: { entries: { status: { value: { state: "running", rpm: 1450 }, visibility: "true", history: "30D" } } },
	auth: "secret",
	checksCredential: true,
	status: 201,
	response: ownEntries,
	params: ledgerParams,
	body: addBody,
	async run({ params, body }, ctx) {
		return send(ctx, params, {
			action: "add_twin_ledger_entry",
			kind: "add",
			entries: changes(body.entries),
			conditions: body.conditions,
		});
	},
});

// An update's body, sent whole (given fields replace stored ones) or as a merge patch: the same
// entries, one kind of write or the other.
type UpdateInput = {
	merge: boolean;
	body: { entries: Record<string, Record<string, unknown>>; conditions?: Record<string, string> };
};

function updates(action: LedgerAction, { merge, body: { entries, conditions } }: UpdateInput): Request {
	if (merge) return { action, kind: "merge", entries: changes<EntryPatch>(entries), conditions };
	return { action, kind: "update", entries: changes<EntryChange>(entries), conditions };
}

export const updateTwinLedgerEntry = defineOperation({
	name: "update_twin_ledger_entry",
	summary:
		"Change entries of the caller's ledger on a twin; given fields replace stored ones, or merge in a merge patch",
	description:
		"Changes entries of the caller's own ledger on a twin it can see; given fields replace the stored ones. Sent as application/merge-patch+json (RFC 7396), an entry's value merges into the stored value and its publish by topic (null removes one); an entry given as null is 400101. An unknown or hidden name is 404 and nothing is written.",
	refuses: ["not_found", "not_owner", "escalation", "condition_failed", "ledger_too_large"],
	example: {
		entries: { status: { value: { state: "stopped", rpm: 0 } } },
		conditions: { status: "value_changed_ts > 0" },
	},
	auth: "secret",
	checksCredential: true,
	response: ownEntries,
	params: ledgerParams,
	body: updateBody,
	merge: {
		body: mergeBody,
		example: { entries: { status: { value: { rpm: 0, fault: null }, publish: { alerts: null } } } },
	},
	async run({ params, ...input }, ctx) {
		return send(ctx, params, updates("update_twin_ledger_entry", input));
	},
});

export const updateTwinLedgerEntryValue = defineOperation({
	name: "update_twin_ledger_entry_value",
	summary: "Change the values of entries of the caller's ledger on a twin",
	description:
		"Changes only the values of entries of the caller's own ledger on a twin it can see; sent as application/merge-patch+json (RFC 7396), each value merges into the stored value. An unknown or hidden name is 404 and nothing is written.",
	refuses: ["not_found", "not_owner", "condition_failed", "ledger_too_large"],
	example: { entries: { status: { value: { state: "running", rpm: 1500 } } } },
	auth: "secret",
	checksCredential: true,
	response: ownEntries,
	params: ledgerParams,
	body: updateValueBody,
	merge: { body: updateValueBody, example: { entries: { status: { value: { rpm: 1500 } } } } },
	async run({ params, ...input }, ctx) {
		return send(ctx, params, updates("update_twin_ledger_entry_value", input));
	},
});

export const deleteTwinLedgerEntry = defineOperation({
	name: "delete_twin_ledger_entry",
	summary: "Delete entries (by default all the caller can see) of the caller's ledger on a twin",
	description:
		"Deletes the named entries (by default every one the caller can see) of the caller's own ledger on a twin it can see, and answers them as they were.",
	refuses: ["not_found", "not_owner", "condition_failed"],
	example: { conditions: { status: "value_changed_ts > 0" } },
	auth: "secret",
	checksCredential: true,
	response: ownEntries,
	params: ledgerParams,
	query: z.strictObject({ entries: z.optional(entryList) }),
	body: deleteBody,
	async run({ params, query, body }, ctx) {
		return send(ctx, params, {
			action: "delete_twin_ledger_entry",
			kind: "delete",
			names: query.entries ?? null,
			conditions: body?.conditions,
		});
	},
});

// Only the fields a request names travel on: an absent one keeps its stored value. `E` is what
// the body's schema made of them: a replacement's fields, or a merge patch's.
function changes<E extends EntryPatch>(entries: Record<string, Record<string, unknown>>): Record<string, E> {
	const out: Record<string, E> = {};
	for (const [name, entry] of Object.entries(entries)) {
		const change: EntryPatch = {};
		if ("value" in entry) change.value = entry.value as Json;
		if ("visibility" in entry) change.visibility = entry.visibility as string | null;
		if ("history" in entry) change.history = entry.history as string | null;
		if ("publish" in entry) change.publish = entry.publish as E["publish"];
		if ("timeseries" in entry) change.timeseries = entry.timeseries as EntryPatch["timeseries"];
		out[name] = change as E;
	}
	return out;
}

import type { BatchItem } from "drizzle-orm/batch";
import type { Database } from "../db/client";
import { appendHistory, deleteEntries, dropHistory, type EntryRow, pruneHistory, upsertEntry } from "../db/ledgers";
import { ApiError, type ErrorDetail } from "../base/errors";
import { jsonBytes, utf8Bytes } from "../base/json";
import { type Json, readsRoot } from "../rules/ast";
import { mayReadLedgerInRules } from "../policy/grant";
import type { Caller } from "../base/caller";
import { type Entry, EntrySight } from "../rules/entries";
import type { Sight } from "../rules/reader-filter";
import type { Scope } from "../rules/evaluate";
import { compare, evaluate } from "../rules/evaluate";
import { fanOut, insertSight, streamPublication, truncationLog } from "../db/outbox";
import { type EntryEvent, publications, type Trigger } from "../rules/publish";
import { refuseOverBudget } from "../rules/strings";
import { entryOut, type StoredEntry, storedOf } from "./ledger-view";
import { mergePatch } from "../base/merge-patch";
import type { EntryTimeseries } from "../db/schema";
import type { FeedInput, FeedPlan } from "./timeseries-feed";
import { periodSeconds } from "../rules/timeseries-definition";

// The writes of one account's ledger. AccountDO runs them one at a time, so `conditions` are
// checked against the state the write replaces, and each write is one D1 batch.

export const MAX_LEDGER_BYTES = 64 * 1024;
// The topics one entry may publish to.
export const MAX_TOPICS = 10;

export type LedgerAction =
	| "add_twin_ledger_entry"
	| "update_twin_ledger_entry"
	| "update_twin_ledger_entry_value"
	| "delete_twin_ledger_entry";

export type EntryChange = {
	value?: Json;
	visibility?: string | null;
	history?: string | null;
	publish?: Record<string, string> | null;
	timeseries?: EntryTimeseries | null;
};

// An entry of a merge patch (RFC 7396): its value merges into the stored value, and its publish
// by topic, where a null topic is removed; visibility, history, timeseries and a null value are
// set as given.
export type EntryPatch = Omit<EntryChange, "publish"> & { publish?: Record<string, string | null> | null };

// `writer` is the caller as the Worker checked it; the account's object reads it again, as it
// is when the write runs, and checks `action` and the twin against that.
export type LedgerWrite = {
	action: LedgerAction;
	twin: NonNullable<Scope["twin"]>;
	writer: Caller;
	conditions: Record<string, string>;
} & (
	| { kind: "add" | "update"; entries: Record<string, EntryChange> }
	| { kind: "merge"; entries: Record<string, EntryPatch> }
	| { kind: "delete"; names: string[] | null }
);

type EntriesWrite = Exclude<LedgerWrite, { kind: "delete" }>;

// History keeps what is younger than its period (D, W, M, Y as a timeseries retention).
export function historyCutoff(history: string, at: number): number {
	const seconds = periodSeconds(history);
	return seconds === null ? 0 : at - seconds;
}

// The default of MAX_SUBSCRIPTIONS (wrangler.toml): at most this many messages per topic.
const DEFAULT_FAN_OUT = 1000;

// `notify.fanOut` bounds the messages per topic of one write (MAX_SUBSCRIPTIONS). The account's
// object plans each write on the ledger it keeps, and commits the plans of the writes that wait
// together in one batch (account/ledger-groups.ts).

// A ledger's rows as the writes read it, by name.
export const ledgerOf = (rows: EntryRow[]) => new Map(rows.map((row) => [row.name, storedOf(row)]));

// What one write will do, decided on `current` (the ledger as the write finds it) before
// anything is written: the statements of its one batch (its entries, history, index rows and
// notification messages), its answer, the ledger after it, and `seen`, the entries the writer
// sees of `current` (what reading the ledger costs it in Server-Timing). `committed` runs once
// the statements have landed. Throws the write's refusal.
//
// An entry the writer cannot see is absent to its writes, as to its reads: update and delete
// pass it by, conditions read it as null, Server-Timing does not count it, and an add may not
// make an entry its writer would not see (403102 for a hidden name and an absent one alike).
export async function planLedgerWrite(
	db: Database,
	write: LedgerWrite,
	current: Map<string, StoredEntry>,
	at: number,
	notify: Notify = {},
): Promise<LedgerPlan> {
	const account = write.writer.account;
	const sight = new EntrySight(write.writer, write.twin, account, current, at);
	// One budget for every rule of the write; past it the write is refused, naming the rule.
	const sees = (entry: StoredEntry) => refuseOverBudget(`entries.${entry.name}`, () => sight.sees(entry));
	const seen = [...current.values()].filter(sees).length;
	notify.read?.(seen);
	checkConditions(sight, write.conditions);

	const key = (name: string) => ({ twin: write.twin.uuid, account, name });
	const statements: BatchItem<"sqlite">[] = [];
	const answer: Record<string, StoredEntry> = {};

	if (write.kind === "delete") {
		for (const name of write.names ?? [...current.keys()]) {
			const entry = current.get(name);
			if (entry && sees(entry)) answer[name] = entry;
		}
		const names = Object.keys(answer);
		if (names.length) statements.push(...deleteEntries(db, write.twin.uuid, account, names));
		// Own keys only: `in` would also find Object.prototype's, and drop an entry named "constructor".
		const left = new Map([...current].filter(([name]) => !Object.hasOwn(answer, name)));
		const events = Object.values(answer).map((entry) => ({
			name: entry.name,
			entry,
			old_value: entry.value,
			new_value: null,
		}));
		return plan(
			db,
			statements,
			{ write, at, notify, trigger: "ledger.entry.deleted", events, ledger: left, before: current, sight },
			answer,
			seen,
		);
	}

	const after = new Map(current);
	const events: EntryEvent[] = [];
	refuseLedgerReaders(write, sight);
	refuseUnwritable(write, current, sees, at);
	await refuseUnknownTables(write, notify);
	for (const [name, change] of changesOf(write, current)) {
		const before = current.get(name);
		const next = merged(name, before, change, at);
		if (!next.changed) {
			answer[name] = next.entry;
			continue;
		}
		after.set(name, next.entry);
		answer[name] = next.entry;
		// A value change is an event; a change of visibility, history or publish alone is not.
		if (next.valueChanged)
			events.push({ name, entry: next.entry, old_value: before ? before.value : null, new_value: next.entry.value });
		statements.push(upsertEntry(db, rowOf(write.twin.uuid, account, next.entry)));
		const history = next.entry.history;
		if (history === null) {
			if (before?.history) statements.push(dropHistory(db, key(name)));
			continue;
		}
		// The newest record is always the current value, also when history starts now.
		if (next.valueChanged || !before?.history) {
			statements.push(appendHistory(db, key(name), next.entry.value_changed_ts, next.entry.text));
		}
		statements.push(pruneHistory(db, key(name), historyCutoff(history, at)));
	}
	// The limit is the ledger's, hidden entries included (every read and write loads them all);
	// the refusal names only the limit, not the total, which would count the hidden entries.
	if (ledgerBytes(after) > MAX_LEDGER_BYTES && ledgerBytes(after) > ledgerBytes(current)) {
		throw new ApiError("ledger_too_large", {
			description: `The ledger would exceed its limit of ${MAX_LEDGER_BYTES} bytes`,
		});
	}
	const trigger = write.kind === "add" ? "ledger.entry.added" : "ledger.entry.updated";
	return plan(
		db,
		statements,
		{ write, at, notify, trigger, events, ledger: after, before: current, sight },
		answer,
		seen,
	);
}

// `index` gives the statements that bring the writing account's Indexes tables up to the
// ledger as written (account/index-tables.ts), and what to do once they have landed.
type IndexChanges = (ledger: {
	account: string;
	twin: string;
	owner: string;
	values: Record<string, Json>;
}) => Promise<{ statements: BatchItem<"sqlite">[]; committed: () => void }>;
// `timeseries` checks the tables entries name, and gives the points a write's value changes
// make (account/timeseries-feed.ts). `read` learns how many entries of the ledger the writer
// sees, once the write has read them.
type Notify = {
	fanOut?: number;
	index?: IndexChanges;
	timeseries?: {
		check: (entries: Record<string, { timeseries?: unknown }>) => Promise<ErrorDetail[]>;
		plan: (input: FeedInput) => Promise<FeedPlan>;
	};
	read?: (seen: number) => void;
};

export type LedgerPlan = {
	statements: BatchItem<"sqlite">[];
	// The timeseries points it commits, to hand to their chunk objects once it has; `feeds`: it
	// writes outbox rows (points or dropped ones) the drain must see to.
	points: FeedPlan["deliveries"];
	feeds: boolean;
	value: ReturnType<typeof entriesOut>;
	after: Map<string, StoredEntry>;
	seen: number;
	published: boolean;
	grown: number;
	committed: () => void;
};

// The write's events: its trigger, each entry's change, the ledger after it (and before), and
// the sight the write was checked with (its budget is the request's).
type Events = {
	write: LedgerWrite;
	at: number;
	notify: Notify;
	trigger: Trigger;
	events: EntryEvent[];
	ledger: Map<string, StoredEntry>;
	before: Map<string, StoredEntry>;
	sight: EntrySight;
};

// The change lands whole or not at all, and with it its notification messages (the outbox
// rows, one per trigger, topic and subscription, and the live streams' row): an event commits
// exactly when its change does, since they are statements of the same batch.
async function plan(
	db: Database,
	statements: BatchItem<"sqlite">[],
	e: Events,
	answer: Record<string, StoredEntry>,
	seen: number,
): Promise<LedgerPlan> {
	const { writer, twin } = e.write;
	// Publish rules are the writer's: they read the ledger after the write as the writer sees it,
	// within the request's budget.
	const sight = new EntrySight(writer, twin, writer.account, e.ledger, e.at, e.sight.budget);
	const events = publications(sight, e.trigger, e.events, e.at);
	const published = Object.keys(events).length > 0;
	// A write that changes nothing leaves the rows as they are.
	const values = Object.fromEntries([...e.ledger].map(([name, entry]) => [name, entry.value]));
	const index =
		statements.length && e.notify.index
			? await e.notify.index({ account: writer.account, twin: twin.uuid, owner: twin.owner, values })
			: undefined;
	if (index) statements.push(...index.statements);
	// A delete changes no value into one: it makes no point.
	const feed =
		e.events.length && e.notify.timeseries && e.trigger !== "ledger.entry.deleted"
			? await e.notify.timeseries.plan({
					account: writer.account,
					twin: twin.uuid,
					owner: twin.owner,
					// The templates read LEDGER as the writer sees it, as its publish rules do: what a
					// point holds, or why it was dropped (a line any reader of the log sees), never
					// tells a confined writer of entries it may not see.
					values: writer.rules.entry === null ? values : refuseOverBudget("entries", () => sight.seenLedger()),
					changed: e.events.map((event) => ({ name: event.name, entry: event.entry as StoredEntry })),
					at: e.at,
					budget: sight.budget,
				})
			: undefined;
	if (feed) statements.push(...feed.statements);
	if (published) {
		const limit = e.notify.fanOut ?? DEFAULT_FAN_OUT;
		// What a confined reader's rules read of the write, once: the twin, the ledger before and
		// after. Its messages name it; their readers' copies are filtered with it.
		const sight: Sight = {
			kind: "ledger",
			twin,
			ledger: writer.account,
			before: [...e.before.values()].map(entryOf),
			after: [...e.ledger.values()].map(entryOf),
		};
		const id = crypto.randomUUID();
		const messages = Object.entries(events).map(([topic, event]) => ({ twin: twin.uuid, topic, event, sight: id }));
		const publication = { account: writer.account, trigger: e.trigger, messages, at: e.at, limit };
		// One row per subscription for webhooks, and one for the account's live streams, whether
		// or not anything listens: a stream that connects later replays it from the log.
		statements.push(
			insertSight(db, { id, account: writer.account, data: JSON.stringify(sight), at: e.at }),
			fanOut(db, publication),
			...truncationLog(db, publication),
			streamPublication(db, { ...publication, sources: [messages] }),
		);
	}
	return {
		statements,
		points: feed?.deliveries ?? [],
		feeds: (feed?.statements.length ?? 0) > 0,
		value: entriesOut(answer),
		after: e.ledger,
		seen,
		published,
		grown: storedBytes(e.ledger) - storedBytes(e.before),
		committed: () => index?.committed(),
	};
}

// An entry as the rules read it, without what they never read (its text, size, history, publish).
function entryOf({
	name,
	value,
	visibility,
	entry_created_ts,
	entry_updated_ts,
	value_changed_ts,
}: StoredEntry): Entry {
	return { name, value, visibility, entry_created_ts, entry_updated_ts, value_changed_ts };
}

function checkConditions(sight: EntrySight, conditions: Record<string, string>) {
	const failed: ErrorDetail[] = [];
	for (const [name, text] of Object.entries(conditions)) {
		const rule = sight.rule(text);
		const holds =
			rule !== null && refuseOverBudget(`conditions.${name}`, () => evaluate(rule, sight.conditionScope(name)));
		if (!holds) failed.push({ path: `conditions.${name}`, message: "The condition is false" });
	}
	if (failed.length)
		throw new ApiError("condition_failed", {
			description: `A condition is false: ${failed.map((f) => f.path.slice(11)).join(", ")}`,
			details: failed,
		});
}

// A writer that may not see every entry writes no visibility or publish rule reading LEDGER
// (see mayReadLedgerInRules): 403102, naming the entries, whatever the ledger holds.
function refuseLedgerReaders(write: EntriesWrite, sight: EntrySight) {
	if (mayReadLedgerInRules(write.writer)) return;
	const reading = Object.keys(write.entries).filter((name) => {
		const { visibility, publish } = write.entries[name];
		return [visibility ?? null, ...Object.values(publish ?? {})].some((text) => readsRoot(sight.rule(text), "LEDGER"));
	});
	if (reading.length === 0) return;
	const details = reading.map((name) => ({
		path: `entries.${name}`,
		message: "A role with an entry rule may not write a visibility or publish rule that reads LEDGER",
	}));
	throw new ApiError("escalation", {
		description: `Rules of ${reading.join(", ")} read LEDGER, which may hold entries the caller cannot see`,
		details,
	});
}

// The tables an entry's `timeseries` names must be the writer's account's, as they are now, with
// the dimensions they declare and templates that parse: else 400101, nothing written.
async function refuseUnknownTables(write: EntriesWrite, notify: Notify) {
	if (!notify.timeseries) return;
	const details = await notify.timeseries.check(write.entries);
	if (details.length)
		throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
}

// An add refuses a name whose entry, as written, the writer could not see: for a hidden name
// and an absent one alike, since a rule that hides an entry by name hides the new one too. It
// then refuses the names the writer sees taken. An update refuses names absent or hidden.
function refuseUnwritable(
	write: EntriesWrite,
	current: Map<string, StoredEntry>,
	sees: (entry: StoredEntry) => boolean,
	at: number,
) {
	const names = Object.keys(write.entries);
	if (write.kind === "add") {
		const unseen = names.filter((name) => !sees(merged(name, undefined, write.entries[name], at).entry));
		if (unseen.length) {
			const details = unseen.map((name) => ({
				path: `entries.${name}`,
				message: "The role's entry rule would hide this entry from its writer",
			}));
			throw new ApiError("escalation", {
				description: `The caller's role would not see ${unseen.join(", ")}: a user adds only entries it can see`,
				details,
			});
		}
		// A name taken by an entry the writer cannot see, though it would see the new one (a rule
		// that reads the entry's value or times, not only its name), is refused too: replacing
		// an entry its writer may not see, or answering 201 for nothing written, would be worse
		// than the existence this tells.
		const taken = names.filter((name) => current.has(name));
		if (taken.length) {
			const details = taken.map((name) => ({ path: `entries.${name}`, message: "The entry exists" }));
			throw new ApiError("conflict", { description: `The ledger already has ${taken.join(", ")}`, details });
		}
		return;
	}
	const unknown = names.filter((name) => {
		const entry = current.get(name);
		return !entry || !sees(entry);
	});
	if (unknown.length) {
		const details = unknown.map((name) => ({ path: `entries.${name}`, message: "No such entry" }));
		throw new ApiError("not_found", { description: `No such entry: ${unknown.join(", ")}`, details });
	}
}

// Each entry's change. A merge patch's is resolved against the stored entry, which
// refuseUnwritable has found: so conditions aside (they read the ledger as it is), the quota,
// no-op, history and events below see the entry as merged.
function changesOf(write: EntriesWrite, current: Map<string, StoredEntry>): [string, EntryChange][] {
	if (write.kind !== "merge") return Object.entries(write.entries);
	return Object.entries(write.entries).map(([name, patch]) => [name, patched(name, patch, current.get(name)!)]);
}

// RFC 7396 as it stands: an object patch merges into a stored object (into an empty one when
// the stored value is not an object), and any other patch replaces the value, so `"value":
// null` sets null as a replacement does; `"publish": null` clears the topics.
function patched(name: string, { value, publish, ...set }: EntryPatch, stored: StoredEntry): EntryChange {
	const change: EntryChange = set;
	if (value !== undefined) change.value = mergePatch(stored.value, value);
	if (publish !== undefined) change.publish = mergedTopics(name, stored.publish, publish);
	return change;
}

// The topics once merged are held to the limit a replacement meets in validation.
function mergedTopics(
	name: string,
	stored: Record<string, string> | null,
	patch: Record<string, string | null> | null,
) {
	const topics = mergePatch(stored, patch) as Record<string, string> | null;
	if (Object.keys(topics ?? {}).length <= MAX_TOPICS) return topics;
	const path = `entries.${name}.publish`;
	const message = `At most ${MAX_TOPICS} topics once merged`;
	throw new ApiError("validation", { description: `${path}: ${message}`, details: [{ path, message }] });
}

// Given fields replace stored ones. A value deep-equal to the stored one is no change, and
// entry_updated_ts moves only when visibility, history or publish really change.
function merged(name: string, before: StoredEntry | undefined, change: EntryChange, at: number) {
	const value = change.value === undefined ? (before?.value ?? null) : change.value;
	const valueChanged = !before || (change.value !== undefined && !compare("==", before.value, change.value));
	const properties = {
		visibility: change.visibility === undefined ? (before?.visibility ?? null) : change.visibility,
		history: change.history === undefined ? (before?.history ?? null) : change.history,
		publish: change.publish === undefined ? (before?.publish ?? null) : change.publish,
		timeseries: change.timeseries === undefined ? (before?.timeseries ?? null) : change.timeseries,
	};
	const propertiesChanged =
		!before ||
		properties.visibility !== before.visibility ||
		properties.history !== before.history ||
		JSON.stringify(properties.publish) !== JSON.stringify(before.publish) ||
		JSON.stringify(properties.timeseries) !== JSON.stringify(before.timeseries);
	const text = valueChanged ? JSON.stringify(value) : (before?.text ?? "null");
	const entry: StoredEntry = {
		name,
		value: valueChanged ? value : (before?.value ?? null),
		text,
		size: entrySize(name, text, properties),
		...properties,
		entry_created_ts: before?.entry_created_ts ?? at,
		entry_updated_ts: propertiesChanged ? at : (before?.entry_updated_ts ?? at),
		value_changed_ts: valueChanged ? at : (before?.value_changed_ts ?? at),
	};
	return { entry, changed: valueChanged || propertiesChanged, valueChanged };
}

// What the entry's row holds, in bytes: `"name":value` (its share of the compact JSON of the
// ledger's values), and its visibility, history and publish as stored. The rules count
// because every read and write loads them with the value, and they may be far larger.
export function entrySize(
	name: string,
	valueText: string,
	properties: Pick<StoredEntry, "visibility" | "history" | "publish" | "timeseries">,
): number {
	const { visibility, history, publish, timeseries } = properties;
	const stored =
		utf8Bytes(visibility ?? "") +
		utf8Bytes(history ?? "") +
		(publish === null ? 0 : jsonBytes(publish)) +
		(timeseries === null ? 0 : jsonBytes(timeseries));
	return jsonBytes(name) + 1 + utf8Bytes(valueText) + stored;
}

// `{` and `}`, the entries, and a comma between each two.
function ledgerBytes(entries: Map<string, { size: number }>): number {
	let total = 2 + Math.max(0, entries.size - 1);
	for (const entry of entries.values()) total += entry.size;
	return total;
}

// The bytes a ledger takes in the account's usage: its compact JSON, and nothing once it holds
// no entry (there is no ledger then), so adding entries and deleting them all nets to zero.
function storedBytes(entries: Map<string, { size: number }>): number {
	return entries.size === 0 ? 0 : ledgerBytes(entries);
}

function rowOf(twin: string, account: string, entry: StoredEntry): EntryRow {
	const { name, text, size, visibility, history, publish, timeseries } = entry;
	const { entry_created_ts, entry_updated_ts, value_changed_ts } = entry;
	return {
		twin,
		account,
		name,
		value: text,
		size,
		visibility,
		history,
		publish,
		timeseries,
		entry_created_ts,
		entry_updated_ts,
		value_changed_ts,
	};
}

function entriesOut(entries: Record<string, StoredEntry>) {
	return { entries: Object.fromEntries(Object.entries(entries).map(([name, entry]) => [name, entryOut(entry)])) };
}

import type { Caller } from "../base/caller";
import type { Json, Rule } from "./ast";
import { type Entry, EntrySight } from "./entries";
import { step } from "./evaluate";
import { ruleOf } from "./stored";
import { Budget, WORK_UNITS } from "./strings";
import { isVisible } from "./visibility";

// What a reader whose role has a twin or an entry rule may see of a ledger write's message
// (docs/streams.md, "Confined readers"): nothing unless it sees the twin as the write left
// it, and of the event's entries only those it sees as the write left the ledger (for a
// delete, as it was before) and, for an update, also before: every value shown, new or old, is
// one a read showed the reader at its time. Pure: the stream object and the webhook fan-out
// call it with what the write recorded.

export type TwinSight = { uuid: string; owner: string; status: string; description: Json };

// What the rules of any reader may read of one ledger write: the twin, and the ledger of the
// publishing account before and after the write.
export type LedgerSight = { twin: TwinSight; ledger: string; before: Entry[]; after: Entry[] };

export type EventBody = { new_value: Json; old_value: Json; changed_ts: number };

// What a sticker's message needs: its twin, its account and its recipients (users, roles or
// accounts).
export type StickerSight = { twin: TwinSight; account: string; recipients: string[] };

// What a write records for the readers its messages may reach.
export type Sight = ({ kind: "ledger" } & LedgerSight) | ({ kind: "sticker" } & StickerSight);

// The event of a message of `trigger` as `reader` may see it, null when nothing is left; and
// the work spent. A sticker's message is whole or nothing: the reader sees its twin and the
// sticker (its own account's, or one addressed to it, its role or its account).
export function filterEvent(
	reader: Caller,
	sight: Sight,
	trigger: string,
	event: Record<string, Json>,
	now: number,
): { event: Record<string, Json> | null; units: number } {
	if (sight.kind === "ledger")
		return filterLedgerEvent(reader, sight, trigger, event as Record<string, EventBody>, now);
	const budget = new Budget(WORK_UNITS, 0);
	const addressed =
		reader.account === sight.account ||
		[reader.user, reader.role, reader.account].some((who) => sight.recipients.includes(who));
	const shown = addressed && isVisible(reader, sight.twin, now, budget);
	return { event: shown ? event : null, units: WORK_UNITS - budget.remaining };
}

// What one turn of filtering may spend (a stream object's append or pump, a page of the webhook
// drain): ten requests' work. Past it, what is left waits for the next turn, in order.
export const FILTER_TURN_UNITS = 10 * WORK_UNITS;

// A role that confines what its users see: a message reaches them filtered.
export const rowScoped = (reader: Pick<Caller, "rules">) => reader.rules.twin !== null || reader.rules.entry !== null;

// The event as `reader` may see it, or null when nothing of it is left; and the work spent.
// Each rule evaluation gets one request's work budget; past it the item is hidden.
export function filterLedgerEvent(
	reader: Caller,
	sight: LedgerSight,
	trigger: string,
	event: Record<string, EventBody>,
	now: number,
): { event: Record<string, EventBody> | null; units: number } {
	const budgets = [new Budget(WORK_UNITS, 0), new Budget(WORK_UNITS, 0), new Budget(WORK_UNITS, 0)];
	const units = () => budgets.reduce((sum, budget) => sum + WORK_UNITS - budget.remaining, 0);
	if (!isVisible(reader, sight.twin, now, budgets[0])) return { event: null, units: units() };
	const sightOf = (entries: Entry[], budget: Budget) =>
		new EntrySight(reader, sight.twin, sight.ledger, new Map(entries.map((e) => [e.name, e])), now, budget);
	const after = sightOf(sight.after, budgets[1]);
	const before = sightOf(sight.before, budgets[2]);
	// A delete's entries are shown as they were; an add's and an update's as they are now.
	const deleted = trigger === "ledger.entry.deleted";
	const [current, entries] = deleted ? [before, sight.before] : [after, sight.after];
	const kept: Record<string, EventBody> = {};
	for (const [name, body] of Object.entries(event)) {
		const entry = entries.find((e) => e.name === name);
		if (!entry || !current.shows(entry)) continue;
		if (trigger === "ledger.entry.updated") {
			const then = sight.before.find((e) => e.name === name);
			if (then && !before.shows(then)) continue;
		}
		kept[name] = body;
	}
	return { event: Object.keys(kept).length ? kept : null, units: units() };
}

// Readers whose rules, and the values those rules read of them, are equal see the same of every
// message: one evaluation serves them all. The key names the rules and those values (the
// described paths of USER and DICT, `user`, `role`, `account`).
export function readerKey(reader: Caller): string {
	const rules = [reader.rules.twin, reader.rules.entry];
	const paths = new Map<string, Json>();
	for (const text of rules) {
		const rule = text === null ? null : ruleOf(text);
		for (const read of readsOf(rule)) {
			const key = JSON.stringify(read);
			if (!paths.has(key)) paths.set(key, valueAt(reader, read));
		}
	}
	return JSON.stringify([rules, [...paths].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))]);
}

type Read = { root: string; path: (string | number)[] };

// The reader's variables a rule reads, each with its path as written (`USER.depot.city`).
function readsOf(rule: Rule | null, found: Read[] = []): Read[] {
	if (rule === null) return found;
	switch (rule.kind) {
		case "literal":
			return found;
		case "var":
			if (["USER", "DICT", "user", "role", "account"].includes(rule.root))
				found.push({ root: rule.root, path: rule.path });
			return found;
		case "list":
			for (const item of rule.items) readsOf(item, found);
			return found;
		case "not":
			return readsOf(rule.arg, found);
		default:
			readsOf(rule.left, found);
			return readsOf(rule.right, found);
	}
}

function valueAt(reader: Caller, read: Read): Json {
	const roots: Record<string, Json> = {
		USER: reader.description as Json,
		DICT: (reader.dict ?? null) as Json,
		user: reader.user,
		role: reader.role,
		account: reader.account,
	};
	return read.path.reduce<Json>(step, roots[read.root] ?? null);
}

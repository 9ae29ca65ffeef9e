import type { Json, Rule } from "./ast";
import type { EntrySight } from "./entries";
import { evaluate } from "./evaluate";
import { ruleOf } from "./stored";
import { refuseOverBudget } from "./strings";

export type Trigger = "ledger.entry.added" | "ledger.entry.updated" | "ledger.entry.deleted";

type Published = {
	name: string;
	value: Json;
	visibility: string | null;
	publish: Record<string, string> | null;
	entry_created_ts: number;
	entry_updated_ts: number;
	value_changed_ts: number;
};

// One entry's event: the entry as the rules see it (after an add or update, as it was before a
// delete) and its values before and after.
export type EntryEvent = { name: string; entry: Published; old_value: Json; new_value: Json };

type EventBody = { new_value: Json; old_value: Json; changed_ts: number };

// The messages one ledger write publishes, per topic: {<entry>: {new_value, old_value,
// changed_ts}} for every entry whose publish rule for that topic is true. `sight` is the
// writer's over the ledger as it stands after the write: the rules read the writer as USER,
// the entry, `trigger` and `old_value`, and LEDGER.<name> of the entries the writer can see.
// The entry's own visibility plays no part: setting `publish` is the owner's consent. A rule
// that needs more than the sight's budget (the write's) refuses the write (400): a message
// silently left out would be lost for good.
export function publications(
	sight: EntrySight,
	trigger: Trigger,
	events: EntryEvent[],
	at: number,
): Record<string, Record<string, EventBody>> {
	const out: Record<string, Record<string, EventBody>> = {};
	const rules = new Map<string, Rule | null>();
	for (const event of events) {
		const publish = event.entry.publish;
		if (!publish) continue;
		// Which entries the writer sees is decided by its role's rule, on the same budget.
		const scope = refuseOverBudget(`entries.${event.name}`, () =>
			sight.publishScope(event.entry, trigger, event.old_value),
		);
		for (const [topic, text] of Object.entries(publish)) {
			if (!rules.has(text)) rules.set(text, ruleOf(text));
			const rule = rules.get(text);
			if (!rule || !refuseOverBudget(`entries.${event.name}.publish.${topic}`, () => evaluate(rule, scope))) continue;
			// Not `??=`: a topic may be named like a property of Object.prototype (constructor,
			// toString), which it would find and write into, and the message would be lost.
			if (!Object.hasOwn(out, topic)) out[topic] = {};
			const messages = out[topic]!;
			messages[event.name] = { new_value: event.new_value, old_value: event.old_value, changed_ts: at };
		}
	}
	return out;
}

import type { Caller } from "../http/auth";
import type { Json, Rule } from "./ast";
import { type EntryScope, evaluate, type Scope } from "./evaluate";
import { ruleOf, scopeOf, type Viewer } from "./visibility";

// A ledger entry as the rules see it, with its value already parsed.
export type Entry = {
	name: string;
	value: Json;
	visibility: string | null;
	entry_created_ts: number;
	entry_updated_ts: number;
	value_changed_ts: number;
};

export type EntryReader = Omit<Viewer, "twinRule"> & { entryRule: string | null };
type TwinView = NonNullable<Scope["twin"]>;

export function entryReaderOf(caller: Caller): EntryReader {
	const { account, user, role, description } = caller;
	return { account, user, role, description, entryRule: caller.rules.entry };
}

// The variables a rule sees for the entry `name` of `ledger`; an absent entry reads null.
export function entryScope(ledger: string, name: string, entry: Entry | undefined, values: Record<string, Json>): EntryScope {
	return {
		ledger,
		name,
		value: entry?.value ?? null,
		created_ts: entry?.entry_created_ts ?? null,
		updated_ts: entry?.entry_updated_ts ?? null,
		value_changed_ts: entry?.value_changed_ts ?? null,
		values,
	};
}

// Decides, for one reader and one ledger, which entries the reader may see. The role's
// entry rule decides alone on the reader's own ledger (null: all of them); on another
// account's ledger it must hold and so must the entry's own visibility rule, which reads the
// reader as USER (a private entry, visibility null, is never seen there).
export class EntrySight {
	private readonly roleRule: Rule | null;
	private readonly rules = new Map<string, Rule | null>();
	private readonly values: Record<string, Json>;

	constructor(
		private readonly reader: EntryReader,
		private readonly twin: TwinView,
		private readonly ledger: string,
		private readonly entries: Map<string, Entry>,
		private readonly now: number,
	) {
		this.roleRule = ruleOf(reader.entryRule);
		this.values = Object.fromEntries([...entries.values()].map((e) => [e.name, e.value]));
	}

	get own() {
		return this.ledger === this.reader.account;
	}

	sees(entry: Entry): boolean {
		const scope = this.scopeFor(entry.name, entry);
		if (!this.roleRule) return this.own;
		if (!evaluate(this.roleRule, scope)) return false;
		if (this.own) return true;
		const visibility = this.rule(entry.visibility);
		return visibility !== null && evaluate(visibility, scope);
	}

	// The scope of a rule about `name` read by this reader (the writer, for conditions).
	scopeFor(name: string, entry = this.entries.get(name)): Scope {
		return { ...scopeOf({ ...this.reader, twinRule: null }, this.now), twin: this.twin, entry: entryScope(this.ledger, name, entry, this.values) };
	}

	rule(text: string | null): Rule | null {
		if (text === null) return null;
		if (!this.rules.has(text)) this.rules.set(text, ruleOf(text));
		return this.rules.get(text) ?? null;
	}
}

import type { Caller } from "../base/caller";
import type { Json, Rule } from "./ast";
import { type EntryScope, evaluate, type Scope } from "./evaluate";
import { ruleOf } from "./stored";
import { Budget, WORK_UNITS, withinBudget } from "./strings";
import { scopeOf } from "./visibility";

// A ledger entry as the rules see it, with its value already parsed.
export type Entry = {
	name: string;
	value: Json;
	visibility: string | null;
	entry_created_ts: number;
	entry_updated_ts: number;
	value_changed_ts: number;
};

type TwinView = NonNullable<Scope["twin"]>;

// The variables a rule sees for the entry `name` of `ledger`; an absent entry reads null.
function entryScope(ledger: string, name: string, entry: Entry | undefined, values: Record<string, Json>): EntryScope {
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
// account's ledger the entry's own visibility rule, which reads the reader as USER, must hold
// too (a private entry, visibility null, is never seen there).
//
// LEDGER.<name> gives a rule the other entries' values. The owner's rules (visibility) read
// them all; rules the reader's side wrote (its role's entry rule on another account's ledger,
// a writer's conditions and publish rules) read only entries the reader may see, so no rule
// can probe a hidden one.
//
// Every rule the sight evaluates is charged to `budget`, the request's. Past it, `sees` throws
// BudgetExceeded (a write must then be refused: a guessed "no" could pass a condition such as
// `entry_value == null` on an entry that is there), while `shows`, for reads, hides the entry.
export class EntrySight {
	private readonly roleRule: Rule | null;
	private readonly all: Record<string, Json>;
	private shown: Record<string, Json> | undefined;
	private seen: Record<string, Json> | undefined;

	constructor(
		private readonly reader: Caller,
		private readonly twin: TwinView,
		private readonly ledger: string,
		private readonly entries: Map<string, Entry>,
		private readonly now: number,
		readonly budget = new Budget(WORK_UNITS),
	) {
		this.roleRule = ruleOf(reader.rules.entry);
		this.all = Object.fromEntries([...entries.values()].map((e) => [e.name, e.value]));
	}

	get own() {
		return this.ledger === this.reader.account;
	}

	sees(entry: Entry): boolean {
		if (!this.roleRule) return this.own;
		if (this.own) return evaluate(this.roleRule, this.scope(entry.name, entry, this.all));
		return this.public(entry) && evaluate(this.roleRule, this.scope(entry.name, entry, this.publicValues()));
	}

	// For reads: an entry whose rules need more work than the request may do is not shown, so
	// a read answers less, never more, and the entries after it still get their turn.
	shows(entry: Entry): boolean {
		return withinBudget(() => this.sees(entry), false);
	}

	// The scope of a condition about `name`: an entry the writer cannot see reads as absent.
	conditionScope(name: string): Scope {
		const entry = this.entries.get(name);
		return this.scope(name, entry && this.sees(entry) ? entry : undefined, this.seenValues());
	}

	// The scope of a publish rule of `entry`, which the writer has just written or deleted (so
	// it knows the entry itself): LEDGER.<name> holds only the entries the writer can see. A
	// true rule adds a statement to the write's batch, which Server-Timing counts.
	publishScope(entry: Entry, trigger: string, old_value: Json): Scope {
		return this.scope(entry.name, entry, this.seenValues(), { trigger, old_value });
	}

	// The values of the entries the reader sees, by name: what its templates may read of LEDGER.
	seenLedger(): Record<string, Json> {
		return this.seenValues();
	}

	rule(text: string | null): Rule | null {
		return text === null ? null : ruleOf(text);
	}

	// Only reads of another account's ledger ask this (writes are on the writer's own), and
	// there an entry whose visibility cannot be decided within the budget is private: neither
	// shown nor read by the reader's entry rule through LEDGER.
	private public(entry: Entry): boolean {
		const visibility = this.rule(entry.visibility);
		return (
			visibility !== null && withinBudget(() => evaluate(visibility, this.scope(entry.name, entry, this.all)), false)
		);
	}

	private seenValues(): Record<string, Json> {
		this.seen ??= Object.fromEntries(
			[...this.entries.values()].filter((e) => this.sees(e)).map((e) => [e.name, e.value]),
		);
		return this.seen;
	}

	private publicValues(): Record<string, Json> {
		this.shown ??= Object.fromEntries(
			[...this.entries.values()].filter((e) => this.public(e)).map((e) => [e.name, e.value]),
		);
		return this.shown;
	}

	private scope(
		name: string,
		entry: Entry | undefined,
		values: Record<string, Json>,
		event: Pick<EntryScope, "trigger" | "old_value"> = {},
	): Scope {
		const scope = { ...entryScope(this.ledger, name, entry, values), ...event };
		return { ...scopeOf(this.reader, this.now), twin: this.twin, entry: scope, budget: this.budget };
	}
}

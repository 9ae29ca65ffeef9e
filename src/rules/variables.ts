import type { Budget } from "./strings";
import type { Json, Root } from "./ast";

// One ledger entry as rules see it; `values` holds every entry of its ledger (LEDGER.<name>).
export type EntryScope = {
	ledger: string;
	name: string;
	value: Json;
	created_ts: number | null;
	updated_ts: number | null;
	value_changed_ts: number | null;
	values: { [name: string]: Json };
	trigger?: string;
	old_value?: Json;
};

// What a rule can see: the twin (absent for rules about no twin), the calling user, the
// identity an identity rule is about, and the ledger entry where the rule is about one.
export type Scope = {
	twin?: { uuid: string; owner: string; status: string; description: Json };
	// `dict`: the request's dictionary (DICT), null without one.
	user: { account: string; user: string; role: string; description: Json; dict?: Json };
	now: number;
	// Counts the characters `in` and `=~` process, for callers that bound a request's work.
	budget?: Budget;
	identity?: string;
	entry?: EntryScope;
	// An Indexes table's row, in the `match` of query_indexes_table.
	row?: { [property: string]: Json };
	// A timeseries point's dimensions by name (query_timeseries_table's `match`).
	dims?: { [dimension: string]: Json };
};

// The twin's columns a rule reads (the names a compiled rule's query gives them).
export type TwinColumn = "uuid" | "owner" | "status" | "description";

// Where every root of the language takes its value, once for the evaluator and the compiler:
// - caller: the calling user and the clock, the same for every twin (a constant in SQL);
// - twin: a column of the twin row (what SQL reads per row);
// - binding: the entry or identity the rule is about; null where the rule binds none
//   (twin rules and `match` bind no entry).
export type Variable =
	| { source: "caller"; value: (scope: Scope) => Json }
	| { source: "twin"; column: TwinColumn; value: (scope: Scope) => Json }
	| { source: "binding"; value: (scope: Scope) => Json };

export const VARIABLES: Record<Root, Variable> = {
	USER: { source: "caller", value: ({ user }) => user.description },
	DICT: { source: "caller", value: ({ user }) => user.dict ?? null },
	account: { source: "caller", value: ({ user }) => user.account },
	user: { source: "caller", value: ({ user }) => user.user },
	role: { source: "caller", value: ({ user }) => user.role },
	now: { source: "caller", value: ({ now }) => now },
	TWIN: { source: "twin", column: "description", value: ({ twin }) => twin?.description ?? null },
	twin: { source: "twin", column: "uuid", value: ({ twin }) => twin?.uuid ?? null },
	owner: { source: "twin", column: "owner", value: ({ twin }) => twin?.owner ?? null },
	twin_status: { source: "twin", column: "status", value: ({ twin }) => twin?.status ?? null },
	identity: { source: "binding", value: ({ identity }) => identity ?? null },
	LEDGER: { source: "binding", value: ({ entry }) => entry?.values ?? null },
	ROW: { source: "binding", value: ({ row }) => row ?? null },
	DIM: { source: "binding", value: ({ dims }) => dims ?? null },
	ledger: { source: "binding", value: ({ entry }) => entry?.ledger ?? null },
	entry_name: { source: "binding", value: ({ entry }) => entry?.name ?? null },
	entry_value: { source: "binding", value: ({ entry }) => entry?.value ?? null },
	entry_created_ts: { source: "binding", value: ({ entry }) => entry?.created_ts ?? null },
	entry_updated_ts: { source: "binding", value: ({ entry }) => entry?.updated_ts ?? null },
	value_changed_ts: { source: "binding", value: ({ entry }) => entry?.value_changed_ts ?? null },
	trigger: { source: "binding", value: ({ entry }) => entry?.trigger ?? null },
	old_value: { source: "binding", value: ({ entry }) => entry?.old_value ?? null },
};

// The rule language's syntax tree, independent of the parser that produced it.

import type { Json } from "../base/json";

export type { Json };

export const SYSTEM_VARIABLES = ["account", "user", "role", "twin", "twin_status", "owner", "now", "identity"] as const;
export type SystemVariable = (typeof SYSTEM_VARIABLES)[number];
// Bound only where a rule is about a ledger entry (entry rules, visibility, publish,
// conditions); null everywhere else. `LEDGER.<name>` reads another entry of the same ledger.
export const ENTRY_VARIABLES = [
	"ledger",
	"entry_name",
	"entry_value",
	"entry_created_ts",
	"entry_updated_ts",
	"value_changed_ts",
	"trigger",
	"old_value",
] as const;
export type EntryVariable = (typeof ENTRY_VARIABLES)[number];
// `ROW.<property>`: the typed values of an Indexes table's row, bound only in the `match` of
// query_indexes_table; null everywhere else. `DIM.<dimension>`: a point's dimension values,
// bound only in the `match` of query_timeseries_table.
export type Root = "TWIN" | "USER" | "DICT" | "LEDGER" | "ROW" | "DIM" | SystemVariable | EntryVariable;

// Every root, where a rule says where it was found.
export const ROOTS: readonly Root[] = [
	"TWIN",
	"USER",
	"DICT",
	"LEDGER",
	"ROW",
	"DIM",
	...SYSTEM_VARIABLES,
	...ENTRY_VARIABLES,
];

// The roots a rule reads, each once, in the order first met.
export function rootsOf(rule: Rule | null, found = new Set<Root>()): Set<Root> {
	if (rule === null) return found;
	switch (rule.kind) {
		case "literal":
			break;
		case "var":
			found.add(rule.root);
			break;
		case "list":
			for (const item of rule.items) rootsOf(item, found);
			break;
		case "not":
			rootsOf(rule.arg, found);
			break;
		default:
			rootsOf(rule.left, found);
			rootsOf(rule.right, found);
	}
	return found;
}

export type CompareOp = "==" | "!=" | "<" | "<=" | ">" | ">=" | "in" | "=~" | "!~";

export type Rule =
	| { kind: "literal"; value: Json }
	| { kind: "var"; root: Root; path: (string | number)[] }
	| { kind: "list"; items: Rule[] }
	| { kind: "not"; arg: Rule }
	| { kind: "logical"; op: "and" | "or"; left: Rule; right: Rule }
	| { kind: "compare"; op: CompareOp; left: Rule; right: Rule };

export type JsonClass = "null" | "bool" | "number" | "string" | "array" | "object";

export function classOf(value: Json): JsonClass {
	if (value === null) return "null";
	if (Array.isArray(value)) return "array";
	switch (typeof value) {
		case "boolean":
			return "bool";
		case "number":
			return "number";
		case "string":
			return "string";
		default:
			return "object";
	}
}

// Whether a rule reads the variable `root` anywhere (to know whether a read must fetch it).
export function readsRoot(rule: Rule | null, root: Root): boolean {
	if (rule === null) return false;
	switch (rule.kind) {
		case "literal":
			return false;
		case "var":
			return rule.root === root;
		case "list":
			return rule.items.some((item) => readsRoot(item, root));
		case "not":
			return readsRoot(rule.arg, root);
		default:
			return readsRoot(rule.left, root) || readsRoot(rule.right, root);
	}
}

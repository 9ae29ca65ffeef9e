import { type CompareOp, classOf, type Json, type Rule } from "./ast";
import { type Budget, includes, search } from "./strings";

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
	user: { account: string; user: string; role: string; description: Json };
	now: number;
	// Counts the characters `in` and `=~` process, for callers that bound a request's work.
	budget?: Budget;
	identity?: string;
	entry?: EntryScope;
};

// Evaluation never throws: a missing attribute is null, and a comparison between values of
// different types is false. Only `true` itself counts as true.
export function evaluate(rule: Rule, scope: Scope): boolean {
	return valueOf(rule, scope) === true;
}

export function valueOf(rule: Rule, scope: Scope): Json {
	switch (rule.kind) {
		case "literal":
			return rule.value;
		case "var":
			return rule.path.reduce<Json>(step, rootOf(rule.root, scope));
		case "list":
			return rule.items.map((item) => valueOf(item, scope));
		case "not":
			return !evaluate(rule.arg, scope);
		case "logical":
			return rule.op === "and"
				? evaluate(rule.left, scope) && evaluate(rule.right, scope)
				: evaluate(rule.left, scope) || evaluate(rule.right, scope);
		case "compare":
			return compare(rule.op, valueOf(rule.left, scope), valueOf(rule.right, scope), scope.budget);
	}
}

function rootOf(root: string, { twin, user, now, identity, entry }: Scope): Json {
	switch (root) {
		case "LEDGER":
			return entry?.values ?? null;
		case "ledger":
			return entry?.ledger ?? null;
		case "entry_name":
			return entry?.name ?? null;
		case "entry_value":
			return entry?.value ?? null;
		case "entry_created_ts":
			return entry?.created_ts ?? null;
		case "entry_updated_ts":
			return entry?.updated_ts ?? null;
		case "value_changed_ts":
			return entry?.value_changed_ts ?? null;
		case "trigger":
			return entry?.trigger ?? null;
		case "old_value":
			return entry?.old_value ?? null;
		case "TWIN":
			return twin?.description ?? null;
		case "USER":
			return user.description;
		case "account":
			return user.account;
		case "user":
			return user.user;
		case "role":
			return user.role;
		case "now":
			return now;
		case "twin":
			return twin?.uuid ?? null;
		case "twin_status":
			return twin?.status ?? null;
		case "owner":
			return twin?.owner ?? null;
		case "identity":
			return identity ?? null;
		default:
			return null;
	}
}

// Numbers index arrays and strings name object keys; anything else reads as null.
export function step(value: Json, key: string | number): Json {
	if (typeof key === "number") {
		return Array.isArray(value) && Number.isInteger(key) && key >= 0 && key < value.length ? value[key] : null;
	}
	if (value !== null && typeof value === "object" && !Array.isArray(value) && Object.hasOwn(value, key)) {
		return value[key];
	}
	return null;
}

export function compare(op: CompareOp, left: Json, right: Json, budget?: Budget): boolean {
	switch (op) {
		case "==":
			return equality(left, right) === "equal";
		case "!=":
			return equality(left, right) === "different";
		case "<":
			return order(left, right, (c) => c < 0);
		case "<=":
			return order(left, right, (c) => c <= 0);
		case ">":
			return order(left, right, (c) => c > 0);
		case ">=":
			return order(left, right, (c) => c >= 0);
		case "in":
			return contains(right, left, budget);
		case "=~":
			return matches(left, right, budget) === true;
		case "!~":
			return matches(left, right, budget) === false;
	}
}

// null compares with anything (equal only to null); otherwise both sides must be of one type.
function equality(left: Json, right: Json): "equal" | "different" | "incomparable" {
	const l = classOf(left);
	const r = classOf(right);
	if (l === "null" || r === "null") return l === r ? "equal" : "different";
	if (l !== r) return "incomparable";
	return deepEqual(left, right) ? "equal" : "different";
}

export function deepEqual(a: Json, b: Json): boolean {
	if (a === b) return true;
	if (classOf(a) !== classOf(b) || a === null || b === null || typeof a !== "object" || typeof b !== "object") {
		return false;
	}
	if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
	const ak = Object.keys(a);
	const bo = b as Record<string, Json>;
	return ak.length === Object.keys(bo).length && ak.every((k) => Object.hasOwn(bo, k) && deepEqual((a as Record<string, Json>)[k], bo[k]));
}

function order(left: Json, right: Json, test: (c: number) => boolean): boolean {
	if (typeof left === "number" && typeof right === "number") return test(left < right ? -1 : left > right ? 1 : 0);
	if (typeof left === "string" && typeof right === "string") return test(compareCodePoints(left, right));
	return false;
}

// Code point order equals UTF-8 byte order, which is how SQLite compares text.
export function compareCodePoints(a: string, b: string): number {
	const x = Array.from(a);
	const y = Array.from(b);
	for (let i = 0; i < Math.min(x.length, y.length); i++) {
		const d = (x[i].codePointAt(0) ?? 0) - (y[i].codePointAt(0) ?? 0);
		if (d !== 0) return d;
	}
	return x.length - y.length;
}

// `in`: an element of a list, a substring of a string, a key of an object.
function contains(container: Json, item: Json, budget?: Budget): boolean {
	if (Array.isArray(container)) return container.some((element) => equality(item, element) === "equal");
	if (typeof container === "string") return typeof item === "string" && includes(container, item, budget);
	if (container !== null && typeof container === "object") return typeof item === "string" && Object.hasOwn(container, item);
	return false;
}

// undefined when the sides are not two strings or the pattern is not one RE2 can run (a
// pattern read from a twin is only known here, so it cannot be refused earlier).
function matches(subject: Json, pattern: Json, budget?: Budget): boolean | undefined {
	if (typeof subject !== "string" || typeof pattern !== "string") return undefined;
	return search(subject, pattern, budget);
}

import { type CompareOp, classOf, type Json, type Root, type Rule } from "./ast";
import { deepEqual, UNITS_PER_VALUE } from "./equal";
import { type Budget, includes, search } from "./strings";
import { type EntryScope, type Scope, VARIABLES } from "./variables";

export type { EntryScope, Scope };

// Evaluation never throws: a missing attribute is null, and a comparison between values of
// different types is false. Only `true` itself counts as true.
export function evaluate(rule: Rule, scope: Scope): boolean {
	return valueOfRule(rule, scope) === true;
}

export function valueOfRule(rule: Rule, scope: Scope): Json {
	switch (rule.kind) {
		case "literal":
			return rule.value;
		case "var":
			return rule.path.reduce<Json>(step, rootOf(rule.root, scope));
		case "list":
			return rule.items.map((item) => valueOfRule(item, scope));
		case "not":
			return !evaluate(rule.arg, scope);
		case "logical":
			return rule.op === "and"
				? evaluate(rule.left, scope) && evaluate(rule.right, scope)
				: evaluate(rule.left, scope) || evaluate(rule.right, scope);
		case "compare":
			return compare(rule.op, valueOfRule(rule.left, scope), valueOfRule(rule.right, scope), scope.budget);
	}
}

// A root the table does not know (none parses) reads null, as a missing attribute does.
function rootOf(root: Root, scope: Scope): Json {
	return VARIABLES[root]?.value(scope) ?? null;
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
			return equality(left, right, budget) === "equal";
		case "!=":
			return equality(left, right, budget) === "different";
		case "<":
			return order(left, right, (c) => c < 0, budget);
		case "<=":
			return order(left, right, (c) => c <= 0, budget);
		case ">":
			return order(left, right, (c) => c > 0, budget);
		case ">=":
			return order(left, right, (c) => c >= 0, budget);
		case "in":
			return contains(right, left, budget);
		case "=~":
			return matches(left, right, budget) === true;
		case "!~":
			return matches(left, right, budget) === false;
	}
}

// null compares with anything (equal only to null); otherwise both sides must be of one type.
function equality(left: Json, right: Json, budget?: Budget): "equal" | "different" | "incomparable" {
	budget?.spend(UNITS_PER_VALUE);
	const l = classOf(left);
	const r = classOf(right);
	if (l === "null" || r === "null") return l === r ? "equal" : "different";
	if (l !== r) return "incomparable";
	return deepEqual(left, right, budget) ? "equal" : "different";
}

function order(left: Json, right: Json, test: (c: number) => boolean, budget?: Budget): boolean {
	if (typeof left === "number" && typeof right === "number") return test(left < right ? -1 : left > right ? 1 : 0);
	if (typeof left === "string" && typeof right === "string") {
		// Both strings are split into code points first.
		budget?.spend(left.length + right.length);
		return test(compareCodePoints(left, right));
	}
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
	if (Array.isArray(container)) return container.some((element) => equality(item, element, budget) === "equal");
	if (typeof container === "string") return typeof item === "string" && includes(container, item, budget);
	if (container !== null && typeof container === "object")
		return typeof item === "string" && Object.hasOwn(container, item);
	return false;
}

// undefined when the sides are not two strings or the pattern is not one RE2 can run (a
// pattern read from a twin is only known here, so it cannot be refused earlier).
function matches(subject: Json, pattern: Json, budget?: Budget): boolean | undefined {
	if (typeof subject !== "string" || typeof pattern !== "string") return undefined;
	return search(subject, pattern, budget);
}

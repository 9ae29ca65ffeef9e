import { classOf, type Json } from "./ast";
import type { Budget } from "./strings";

// Equality of JSON values as rules compare them, in a module of its own: the User Token policy
// (src/policy/token.ts, which authentication imports) compares a new token's dictionary with its
// parent's, and authentication must not load the rest of the language and its
// regular-expression engine for that.

// A value walked by deep equality costs several characters' worth of work (an object's member
// most: a key lookup), and `in` over a list compares every element.
export const UNITS_PER_VALUE = 8;

// Each member is charged before it is walked, so a walk over large values stops within the budget.
export function deepEqual(a: Json, b: Json, budget?: Budget): boolean {
	if (a === b) return true;
	if (classOf(a) !== classOf(b) || a === null || b === null || typeof a !== "object" || typeof b !== "object") {
		return false;
	}
	const same = (x: Json, y: Json) => {
		budget?.spend(UNITS_PER_VALUE);
		return deepEqual(x, y, budget);
	};
	if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
	const ak = Object.keys(a);
	const bo = b as Record<string, Json>;
	return (
		ak.length === Object.keys(bo).length &&
		ak.every((k) => Object.hasOwn(bo, k) && same((a as Record<string, Json>)[k], bo[k]))
	);
}

import { RE2JS } from "re2js";
import { ApiError } from "../base/errors";

// The rule language's string work (`in` on strings, `=~`, `!~`) in time linear in the text,
// whatever the pattern: regular expressions run on RE2 (no backtracking), substrings are found
// with Knuth-Morris-Pratt. A Budget counts the work a request's rules have done (a unit is
// about one character of a substring search), so a page can stop early and any other
// evaluation can give up instead of running on (see src/account/scan.ts).

// What the rules of one request may cost: some tens of milliseconds at the measured rates.
export const WORK_UNITS = 1_000_000;

// The check before each twin (`exhausted`) lets the twin that crosses the line finish; one
// twin that alone would need more than `overrun` past it throws BudgetExceeded instead.
export class Budget {
	constructor(
		public remaining: number,
		private readonly overrun = remaining,
	) {}

	// A charge refused is not deducted: its work is not done, and a caller that treats the
	// refusal as "no" (a read hiding one entry) can still afford the cheaper rules after it.
	spend(units: number) {
		if (this.remaining - units < -this.overrun) throw new BudgetExceeded();
		this.remaining -= units;
	}

	get exhausted() {
		return this.remaining <= 0;
	}
}

export class BudgetExceeded extends Error {
	constructor() {
		super("the rule needs more work than one request may do");
	}
}

// The request is refused (400) naming the rule at `path`: no part of its answer may be guessed.
export function overBudget(path: string, error: BudgetExceeded, where = ""): ApiError {
	return new ApiError("validation", {
		description: `${path}: ${error.message}${where}`,
		details: [{ path, message: error.message }],
	});
}

// The answer of `work`, or `otherwise` where that needs more work than the budget allows.
export function withinBudget<T>(work: () => T, otherwise: T): T {
	try {
		return work();
	} catch (error) {
		if (error instanceof BudgetExceeded) return otherwise;
		throw error;
	}
}

export function refuseOverBudget<T>(path: string, work: () => T): T {
	try {
		return work();
	} catch (error) {
		if (error instanceof BudgetExceeded) throw overBudget(path, error);
		throw error;
	}
}

// Compiled patterns, per isolate, by text; a pattern RE2 refuses is remembered as null.
const CACHE_SIZE = 256;
const compiled = new Map<string, RE2JS | null>();

export function regexOf(pattern: string): RE2JS | null {
	const hit = compiled.get(pattern);
	if (hit !== undefined) {
		// Map order is insertion order: re-inserting makes this the most recently used.
		compiled.delete(pattern);
		compiled.set(pattern, hit);
		return hit;
	}
	let regex: RE2JS | null;
	try {
		regex = RE2JS.compile(pattern);
	} catch {
		regex = null;
	}
	if (compiled.size >= CACHE_SIZE) compiled.delete(compiled.keys().next().value as string);
	compiled.set(pattern, regex);
	return regex;
}

// Why RE2 cannot run a pattern (a backreference, a lookaround, bad syntax), with the offset
// of the offending part in the pattern; null when it can.
export function regexError(pattern: string): { offset: number; message: string } | null {
	if (regexOf(pattern)) return null;
	try {
		RE2JS.compile(pattern);
		return null;
	} catch (error) {
		const { error: reason, input } = error as { error?: string; input?: string };
		const offset = input ? Math.max(0, pattern.indexOf(input)) : 0;
		return {
			offset,
			message: `invalid regular expression: ${reason ?? "unsupported syntax"}${input ? ` at '${input}'` : ""}`,
		};
	}
}

// undefined when the pattern cannot be compiled: the comparison is then false either way.
export function search(subject: string, pattern: string, budget?: Budget): boolean | undefined {
	const regex = regexOf(pattern);
	if (!regex) return undefined;
	// RE2 steps every instruction of the compiled program once per character at worst (about
	// as long as a substring search spends on a character), and a counted repetition such as
	// `{999}` makes that program large while the pattern text stays short.
	budget?.spend((subject.length + 1) * regex.programSize());
	return regex.matcher(subject).find();
}

// Knuth-Morris-Pratt: at most 2 * (haystack + needle) steps, unlike a naive search.
export function includes(haystack: string, needle: string, budget?: Budget): boolean {
	budget?.spend(haystack.length + needle.length);
	const m = needle.length;
	if (m === 0) return true;
	if (m > haystack.length) return false;
	const fail = new Int32Array(m);
	for (let i = 1, k = 0; i < m; i++) {
		while (k > 0 && needle.charCodeAt(i) !== needle.charCodeAt(k)) k = fail[k - 1];
		if (needle.charCodeAt(i) === needle.charCodeAt(k)) k++;
		fail[i] = k;
	}
	for (let i = 0, k = 0; i < haystack.length; i++) {
		while (k > 0 && haystack.charCodeAt(i) !== needle.charCodeAt(k)) k = fail[k - 1];
		if (haystack.charCodeAt(i) === needle.charCodeAt(k)) k++;
		if (k === m) return true;
	}
	return false;
}

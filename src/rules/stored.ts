import type { Rule } from "./ast";
import { type ParseResult, parseRule } from "./parse";

// Stored rules (roles' rules, entries' visibility and publish, identities' visibility) are
// parsed once per isolate, by their text: the same few texts come back on every request.
// The map is bounded, least recently used first out, so that many distinct texts cannot
// grow it without end. The trees are shared: nothing may change one.
export const STORED_RULE_CACHE_SIZE = 1_000;
const parsed = new Map<string, ParseResult>();

export function parseStoredRule(text: string): ParseResult {
	let result = parsed.get(text);
	if (result) parsed.delete(text);
	else result = parseRule(text);
	parsed.set(text, result);
	if (parsed.size > STORED_RULE_CACHE_SIZE) parsed.delete(parsed.keys().next().value as string);
	return result;
}

// Stored rules were parsed when written. One the parser refuses today (written before a
// stricter check: an infinite number, a pattern RE2 cannot run) shows nothing rather than
// falling back to the wider default of no rule.
export function ruleOf(text: string | null | undefined): Rule | null {
	if (!text) return null;
	const result = parseStoredRule(text);
	return result.ok ? result.rule : { kind: "literal", value: false };
}

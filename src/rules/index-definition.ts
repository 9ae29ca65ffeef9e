import type { ErrorDetail } from "../base/errors";
import { type Root, rootsOf } from "./ast";
import { parseRule } from "./parse";
import { parseTemplate } from "./templates";
import { canonicalType } from "./index-values";

// What an Indexes table's definition may say (docs/indexes.md "Definitions"). The checks are pure, so the Worker
// refuses a create before anything is written and the account's object checks an update's
// merged definition the same way.

export const INDEX_NAME = /^[a-z_][0-9a-z_]{0,63}$/;
export const MAX_INDEX_PROPERTIES = 32;

// A row is recomputed only when its ledger changes: a rule reading anything else (the twin's
// description, the user, the clock) would go stale without a word.
export const INDEX_RULE_ROOTS: readonly Root[] = ["LEDGER", "ledger", "account", "twin", "owner"];

export type Definition = {
	rule: string;
	properties: { names: string[]; types: string[] };
	templates: { properties: Record<string, string> };
};

// Where in the rule's text a root is first written, for the refusal's position. Fixed (found by
// test/indexes/definitions.test.ts): a search of the word alone pointed into a string literal
// (`LEDGER.k == 'now' or now > 1` answered the quote's position), so quoted text is skipped, and
// so is a name after `.` (a member, `LEDGER.now`), as the parser reads them.
function positionOf(text: string, root: string): number {
	const token = /'(?:[^'\\]|\\.)*'?|"(?:[^"\\]|\\.)*"?|[A-Za-z_$][A-Za-z0-9_$]*|\S/gs;
	let previous = "";
	for (let found = token.exec(text); found; found = token.exec(text)) {
		if (found[0] === root && previous !== ".") return found.index;
		previous = found[0];
	}
	return 0;
}

// One detail per problem, paths relative to the definition (`rule`, `properties.names.2`,
// `templates.properties.rpm`); none when the definition holds.
export function checkDefinition(definition: Definition): ErrorDetail[] {
	const details: ErrorDetail[] = [];
	const parsed = parseRule(definition.rule);
	if (!parsed.ok) {
		details.push({ path: "rule", message: `${parsed.message} at position ${parsed.position}` });
	} else {
		for (const root of rootsOf(parsed.rule)) {
			if (INDEX_RULE_ROOTS.includes(root)) continue;
			const message = `'${root}' cannot be read by an index rule (only ${INDEX_RULE_ROOTS.join(", ")}) at position ${positionOf(definition.rule, root)}`;
			details.push({ path: "rule", message });
		}
	}
	const { names, types } = definition.properties;
	if (names.length < 1 || names.length > MAX_INDEX_PROPERTIES)
		details.push({ path: "properties.names", message: `Must hold 1 to ${MAX_INDEX_PROPERTIES} names` });
	if (types.length !== names.length) details.push({ path: "properties.types", message: "Must hold one type per name" });
	const seen = new Set<string>();
	names.forEach((name, i) => {
		if (!INDEX_NAME.test(name))
			details.push({ path: `properties.names.${i}`, message: `Must match ${INDEX_NAME.source}` });
		else if (seen.has(name)) details.push({ path: `properties.names.${i}`, message: "Names must be unique" });
		seen.add(name);
	});
	types.forEach((type, i) => {
		const canonical = canonicalType(type);
		if (canonical === "unsupported")
			details.push({
				path: `properties.types.${i}`,
				message: `'${type}' is not supported: use string, integer, float, boolean or timestamp`,
			});
		else if (canonical === undefined)
			details.push({
				path: `properties.types.${i}`,
				message: `Unknown type '${type}': use string, integer, float, boolean or timestamp`,
			});
	});
	const templates = definition.templates.properties;
	for (const name of names) {
		if (!Object.hasOwn(templates, name))
			details.push({ path: `templates.properties.${name}`, message: "Every property needs a template" });
	}
	for (const [name, text] of Object.entries(templates)) {
		if (!seen.has(name)) {
			details.push({ path: `templates.properties.${name}`, message: "No property of this name" });
			continue;
		}
		const template = parseTemplate(text);
		if (!template.ok)
			details.push({
				path: `templates.properties.${name}`,
				message: `${template.message} at position ${template.position}`,
			});
	}
	return details;
}

// The templates of an Indexes table's properties (docs/indexes.md "Definitions"): Python
// `str.format` text whose fields read the ledger's entries, `{LEDGER[status][rpm]}`, or the
// row's twin, ledger and owner. Conversions and format specs are deferred, so they are refused
// rather than ignored: a definition written for the original would render differently.
// Timeseries templates (docs/timeseries.md) also read the entry being written: `{entry_name}`,
// `{entry_value}` (with the accessors of a LEDGER entry) and `{value_changed_ts}`; an Indexes
// table's row is about the whole ledger, not one entry, so its templates keep refusing them.

import type { Json } from "./ast";
import { type JsonTexts, jsonWithin } from "./bounded-json";
import { UNITS_PER_VALUE } from "./equal";
import { step } from "./evaluate";
import { MAX_STRING_VALUE } from "./index-values";
import type { Budget } from "./strings";

export const MAX_TEMPLATE_LENGTH = 256;
export const MAX_TEMPLATE_FIELDS = 8;

// `[<digits>]` has both readings, as in Python: `index` on a list, `key` on anything else.
// `[<key>]` and `.<name>` have only a key (`index` null).
export type Accessor = { key: string; index: number | null };

export type Field =
	| { kind: "entry"; entry: string; path: Accessor[] }
	| { kind: "twin" | "ledger" | "owner" }
	| { kind: "entry_value"; path: Accessor[] }
	| { kind: "entry_name" | "value_changed_ts" };

// `entryFields` allows the fields of the entry being written (Timeseries templates).
export type TemplateOptions = { entryFields?: boolean };

// Literal text (braces already unescaped, adjacent text merged, never empty) and fields in order.
export type Template = { parts: (string | Field)[] };

export type TemplateResult = { ok: true; template: Template } | { ok: false; message: string; position: number };

// What a row's fields read: `entries` are the ledger's values by entry name (`LEDGER[...]`),
// `ledger` is what `{ledger}` renders (the account uuid); `entry` is the entry being written,
// which the entry fields read (null without it).
export type TemplateInput = {
	entries: Record<string, Json>;
	twin: string;
	ledger: string;
	owner: string;
	entry?: { name: string; value: Json; value_changed_ts: number };
};

const ROOT_END = /[[.!:{}]/g;
const NAME = /[A-Za-z_][A-Za-z0-9_]*/y;
const DIGITS = /^[0-9]+$/;
const FIELD_NAMES = "LEDGER[<entry>], twin, ledger or owner";
const ENTRY_FIELD_NAMES = "LEDGER[<entry>], twin, ledger, owner, entry_name, entry_value or value_changed_ts";

class TemplateError extends Error {
	constructor(
		message: string,
		readonly position: number,
	) {
		super(message);
	}
}

export function parseTemplate(text: string, options: TemplateOptions = {}): TemplateResult {
	if (text.length > MAX_TEMPLATE_LENGTH) {
		return { ok: false, position: MAX_TEMPLATE_LENGTH, message: `longer than ${MAX_TEMPLATE_LENGTH} characters` };
	}
	try {
		return { ok: true, template: { parts: parts(text, options.entryFields === true) } };
	} catch (error) {
		if (error instanceof TemplateError) return { ok: false, position: error.position, message: error.message };
		throw error;
	}
}

function parts(text: string, entryFields: boolean): (string | Field)[] {
	const result: (string | Field)[] = [];
	let literal = "";
	let fields = 0;
	let i = 0;
	while (i < text.length) {
		const c = text[i];
		if ((c === "{" || c === "}") && text[i + 1] === c) {
			literal += c;
			i += 2;
		} else if (c === "}") {
			throw new TemplateError("single }: write }} for a literal brace", i);
		} else if (c === "{") {
			if (++fields > MAX_TEMPLATE_FIELDS) throw new TemplateError(`more than ${MAX_TEMPLATE_FIELDS} fields`, i);
			if (literal) result.push(literal);
			literal = "";
			const [field, end] = parseField(text, i, entryFields);
			result.push(field);
			i = end;
		} else {
			literal += c;
			i++;
		}
	}
	if (literal) result.push(literal);
	return result;
}

// The field opened by the `{` at `open`, and the offset after its `}`.
function parseField(text: string, open: number, entryFields: boolean): [Field, number] {
	const start = open + 1;
	ROOT_END.lastIndex = start;
	const i = ROOT_END.exec(text)?.index ?? text.length;
	const root = text.slice(start, i);
	if (i >= text.length) throw new TemplateError("{ without its }", open);
	if (root === "twin" || root === "ledger" || root === "owner") {
		if (text[i] === "[" || text[i] === ".") throw new TemplateError(`${root} takes no [key] or .name`, i);
		return [{ kind: root }, close(text, open, i, "}")];
	}
	const names = entryFields ? ENTRY_FIELD_NAMES : FIELD_NAMES;
	if (root === "") {
		if (text[i] === "}") throw new TemplateError(`empty field: name ${names}`, open);
		throw new TemplateError(`expected ${names} after {`, i);
	}
	if (entryFields && (root === "entry_name" || root === "value_changed_ts")) {
		if (text[i] === "[" || text[i] === ".") throw new TemplateError(`${root} takes no [key] or .name`, i);
		return [{ kind: root }, close(text, open, i, "}")];
	}
	if (entryFields && root === "entry_value") {
		const [path, end] = accessors(text, i);
		return [{ kind: "entry_value", path }, close(text, open, end)];
	}
	if (root !== "LEDGER") throw new TemplateError(`unknown field "${root}": use ${names}`, start);
	if (text[i] !== "[") throw new TemplateError("name the entry in brackets: LEDGER[<entry>]", i);
	const [path, end] = accessors(text, i);
	const [entry, ...rest] = path;
	return [{ kind: "entry", entry: entry.key, path: rest }, close(text, open, end)];
}

// The `[key]` and `.name` accessors from `i` on, and the offset after the last of them.
function accessors(text: string, i: number): [Accessor[], number] {
	const path: Accessor[] = [];
	while (text[i] === "[" || text[i] === ".") {
		if (text[i] === "[") {
			const end = text.indexOf("]", i + 1);
			if (end < 0) throw new TemplateError("[ without its ]", i);
			if (end === i + 1) throw new TemplateError("empty []: name an entry or key", i);
			const key = text.slice(i + 1, end);
			path.push({ key, index: DIGITS.test(key) ? Number(key) : null });
			i = end + 1;
		} else {
			NAME.lastIndex = i + 1;
			const name = NAME.exec(text)?.[0];
			if (name === undefined) throw new TemplateError("expected a name (letters, digits, _) after .", i + 1);
			path.push({ key: name, index: null });
			i = NAME.lastIndex;
		}
	}
	return [path, i];
}

// The offset after the `}` expected at `i`, which ends the field opened at `open`.
function close(text: string, open: number, i: number, expected = "[, . or }"): number {
	if (text[i] === "}") return i + 1;
	if (text[i] === "!" || text[i] === ":") throw new TemplateError("conversions and format specs are not supported", i);
	if (i >= text.length) throw new TemplateError("{ without its }", open);
	throw new TemplateError(`expected ${expected} to end the field, not ${JSON.stringify(text[i])}`, i);
}

// One field alone yields its JSON value as is; in text a field renders strings as they are and
// other values as compact JSON, and any null or missing field makes the whole result null
// (never "None" or "null" inside a text). A text stops, and is null, once it would pass
// MAX_STRING_VALUE characters, the longest any property type accepts: no more of a value is
// written than the text can hold (docs/indexes.md). The work, fields read and characters
// written, is charged to `budget`; `texts` shares the JSON of objects among one ledger's
// templates.
export function renderTemplate(template: Template, input: TemplateInput, budget?: Budget, texts?: JsonTexts): Json {
	const { parts } = template;
	if (parts.length === 1 && typeof parts[0] !== "string") return fieldValue(parts[0], input, budget);
	let text = "";
	for (const part of parts) {
		const value = typeof part === "string" ? part : fieldValue(part, input, budget);
		if (value === null) return null;
		const room = MAX_STRING_VALUE - text.length;
		const piece = typeof value === "string" ? value : texts ? texts.of(value, budget) : jsonWithin(value, room, budget);
		if (piece === undefined || piece.length > room) return null;
		budget?.spend(piece.length);
		text += piece;
	}
	return text;
}

function fieldValue(field: Field, input: TemplateInput, budget?: Budget): Json {
	budget?.spend(UNITS_PER_VALUE);
	switch (field.kind) {
		case "twin":
			return input.twin;
		case "ledger":
			return input.ledger;
		case "owner":
			return input.owner;
		case "entry": {
			// Own keys only: an entry named "constructor" or "__proto__" is just a name.
			const value = Object.hasOwn(input.entries, field.entry) ? input.entries[field.entry] : null;
			return walk(value, field.path);
		}
		case "entry_name":
			return input.entry?.name ?? null;
		case "entry_value":
			return walk(input.entry ? input.entry.value : null, field.path);
		case "value_changed_ts":
			return input.entry?.value_changed_ts ?? null;
	}
}

function walk(value: Json, path: Accessor[]): Json {
	return path.reduce<Json>(
		(at, { key, index }) => (index !== null && Array.isArray(at) ? step(at, index) : step(at, key)),
		value,
	);
}

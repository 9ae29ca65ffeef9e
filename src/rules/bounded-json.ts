import type { Json } from "./ast";
import { UNITS_PER_VALUE } from "./equal";
import type { Budget } from "./strings";

// Compact JSON of a value, exactly as JSON.stringify writes it, but written only as far as a
// text can hold: an index template's text stops at 1,024 characters (docs/indexes.md), so a
// 60 KiB entry read by a template costs what 1,024 characters cost, not 60 KiB. Every value
// visited and every character written is charged to the budget.

const OVER = Symbol("longer than the room");

// The text, or undefined once it would pass `room` characters.
export function jsonWithin(value: Json, room: number, budget?: Budget): string | undefined {
	const out: string[] = [];
	let left = room;
	const put = (text: string) => {
		if (text.length > left) throw OVER;
		budget?.spend(text.length);
		left -= text.length;
		out.push(text);
	};
	// A string is escaped only once it fits unescaped (escaping never shortens it).
	const putString = (text: string) => put(text.length > left ? text : JSON.stringify(text));
	const walk = (v: Json) => {
		budget?.spend(UNITS_PER_VALUE);
		if (typeof v === "string") return putString(v);
		if (v === null || typeof v !== "object") return put(JSON.stringify(v));
		if (Array.isArray(v)) {
			put("[");
			for (let i = 0; i < v.length; i++) {
				if (i) put(",");
				walk(v[i]);
			}
			return put("]");
		}
		put("{");
		let first = true;
		// for-in visits own keys in the order JSON.stringify writes them (a parsed value has no
		// enumerable inherited key), and stops with the text.
		for (const key in v) {
			if (!Object.hasOwn(v, key)) continue;
			if (!first) put(",");
			first = false;
			putString(key);
			put(":");
			walk(v[key]);
		}
		put("}");
	};
	try {
		walk(value);
	} catch (error) {
		if (error === OVER) return undefined;
		throw error;
	}
	return out.join("");
}

// The texts of the objects and lists one ledger's templates render, each written once however
// many templates read it (up to `room` characters; undefined past them).
export class JsonTexts {
	private readonly texts = new WeakMap<object, string | undefined>();

	constructor(private readonly room: number) {}

	of(value: Json, budget?: Budget): string | undefined {
		if (value === null || typeof value !== "object") return jsonWithin(value, this.room, budget);
		if (this.texts.has(value)) {
			const text = this.texts.get(value);
			budget?.spend(UNITS_PER_VALUE + (text?.length ?? 0));
			return text;
		}
		const text = jsonWithin(value, this.room, budget);
		this.texts.set(value, text);
		return text;
	}
}

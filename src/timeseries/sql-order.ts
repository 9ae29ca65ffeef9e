import type { Json } from "../base/json";

// The order SQLite sorts values in, so that an answer's groups come in the order the same
// query in SQL would give: null, then numbers (booleans as 0 and 1), then text by its UTF-8
// bytes, then anything else (a blob there; here an array or object, by its JSON text).

function rank(value: Json): number {
	if (value === null) return 0;
	if (typeof value === "number" || typeof value === "boolean") return 1;
	return typeof value === "string" ? 2 : 3;
}

export function compareSql(a: Json, b: Json): number {
	const ra = rank(a);
	const rb = rank(b);
	if (ra !== rb) return ra - rb;
	if (ra === 0) return 0;
	if (ra === 1) return Math.sign(Number(a) - Number(b));
	if (ra === 2) return compareText(a as string, b as string);
	return compareText(JSON.stringify(a), JSON.stringify(b));
}

export function compareSqlLists(a: readonly Json[], b: readonly Json[]): number {
	for (let i = 0; i < Math.min(a.length, b.length); i++) {
		const c = compareSql(a[i], b[i]);
		if (c !== 0) return c;
	}
	return a.length - b.length;
}

// UTF-8 byte order is code point order; JavaScript's `<` compares UTF-16 units, which puts a
// character past U+FFFF (a surrogate pair) before U+E000..U+FFFF.
export function compareText(a: string, b: string): number {
	if (a === b) return 0;
	let i = 0;
	let j = 0;
	while (i < a.length && j < b.length) {
		const ca = a.codePointAt(i) as number;
		const cb = b.codePointAt(j) as number;
		if (ca !== cb) return ca - cb;
		i += ca > 0xffff ? 2 : 1;
		j += cb > 0xffff ? 2 : 1;
	}
	return a.length - i - (b.length - j);
}

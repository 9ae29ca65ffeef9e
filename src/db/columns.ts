// How many columns a statement answers with, read from its SQL: the top-level list after
// SELECT (up to FROM) or after RETURNING. undefined where the text does not say (`*`, or a
// statement that answers no columns). Quotes and parentheses are skipped, so a comma inside
// a call, a subquery or a quoted name does not count.
export function selectedColumns(query: string): number | undefined {
	const words = topLevelWords(query);
	const returning = words.findLastIndex((w) => w.word === "returning");
	const select = words.findIndex((w) => w.word === "select");
	let list: string;
	if (returning >= 0) list = query.slice(words[returning].end);
	else if (select >= 0) {
		const from = words.findIndex((w, i) => i > select && w.word === "from");
		list = query.slice(words[select].end, from >= 0 ? words[from].start : undefined);
	} else return undefined;
	const items = splitTopLevel(list.replace(/^\s*distinct\s/i, ""));
	if (items.some((item) => /(^|\.)\*$/.test(item.trim()))) return undefined;
	return items.length;
}

type Word = { word: string; start: number; end: number };

// Walks the text once, calling `visit` for every character outside quotes at depth 0.
function walkTopLevel(text: string, visit: (index: number) => void) {
	let depth = 0;
	let quote: string | null = null;
	for (let i = 0; i < text.length; i++) {
		const c = text[i];
		if (quote) {
			if (c === quote) quote = null;
		} else if (c === "'" || c === '"' || c === "`") quote = c;
		else if (c === "(") depth++;
		else if (c === ")") depth--;
		else if (depth === 0) visit(i);
	}
}

function topLevelWords(text: string): Word[] {
	const words: Word[] = [];
	let start = -1;
	const flush = (end: number) => {
		if (start >= 0) words.push({ word: text.slice(start, end).toLowerCase(), start, end });
		start = -1;
	};
	let last = -2;
	walkTopLevel(text, (i) => {
		if (i !== last + 1) flush(last + 1);
		if (/[A-Za-z_]/.test(text[i])) {
			if (start < 0) start = i;
		} else flush(i);
		last = i;
	});
	flush(last + 1);
	return words;
}

function splitTopLevel(list: string): string[] {
	const items: string[] = [];
	let from = 0;
	walkTopLevel(list, (i) => {
		if (list[i] === ",") {
			items.push(list.slice(from, i));
			from = i + 1;
		}
	});
	items.push(list.slice(from));
	return items.filter((item) => item.trim() !== "");
}

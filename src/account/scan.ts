import { type PageQuery, type PageRow, TWIN_COLUMNS } from "../db/twins";
import { utf8Bytes } from "../base/json";
import type { Json, Rule } from "../rules/ast";
import { compileRule } from "../rules/compile";
import { evaluate } from "../rules/evaluate";
import type { Caller } from "../base/caller";
import { Budget, BudgetExceeded, overBudget, WORK_UNITS } from "../rules/strings";
import { ruleOf } from "../rules/stored";
import { scopeOf } from "../rules/visibility";

export type ScanRequest = { count: number; match?: string; details: boolean };

// What one page may cost. The answer stays under 4 MiB (the object's RPC answer too); the
// work of the rules over the page (what compiling them decides, then the evaluator) stays
// under WORK_UNITS, after which the page stops early with a cursor, as with the size.
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;
// Room for the envelope and the cursor.
const ENVELOPE_BYTES = 1024;

// One page: the next `count` twins of the account after `after`, read by db/twins.ts with the
// rules compiled to SQL (1, 0 or NULL per twin); the evaluator settles the NULLs in cutPage.
// The page is cut there, not in SQL: a running sum in SQL (a window function) made D1 read
// each row four times. The first twin always stays, so every page moves on.
export type PagePlan = { match: Rule | null; visible: Rule | null; query: PageQuery; budget: Budget };

export function planPage(caller: Caller, after: string, request: ScanRequest, now: number): PagePlan {
	const match = ruleOf(request.match);
	// Every twin of the page is the caller's account's, so without a twin rule all are visible.
	// `match` only ever sees visible twins: otherwise it would probe hidden descriptions.
	const visible = request.details || match ? ruleOf(caller.rules.twin) : null;
	const budget = new Budget(WORK_UNITS);
	const scope = { ...scopeOf(caller, now), budget };
	const conditions = [match, visible]
		.filter((rule) => rule !== null)
		.map((rule) => compileRule(rule, scope, TWIN_COLUMNS));
	const verdict = conditions.length ? conditions.join(" AND ") : "1";
	return {
		match,
		visible,
		budget,
		query: { owner: caller.account, after, count: request.count, verdict, details: request.details },
	};
}

export function cutPage(rows: PageRow[], plan: PagePlan, caller: Caller, request: ScanRequest, now: number) {
	const { match, visible, budget } = plan;
	// Each twin as JSON text: the page crosses the object's RPC boundary as one string and is
	// answered as it is, with no structured clone and no second parse.
	const twins: string[] = [];
	// The rows of the twins shown, for a reader that writes them in its own shape (an export).
	const shown: PageRow[] = [];
	const size = new PageBytes(twins);
	let taken = 0;
	for (const row of rows) {
		if (row.verdict === null && taken > 0 && budget.exhausted) break;
		let accepted: boolean;
		try {
			accepted = row.verdict === 1 || (row.verdict === null && accepts(row, caller, match, visible, now, budget));
		} catch (error) {
			if (!(error instanceof BudgetExceeded)) throw error;
			if (taken === 0) throw overBudget("match", error, " on one twin");
			break;
		}
		if (accepted) {
			const twin = request.details ? detailed(row) : JSON.stringify(row.uuid);
			const bytes = size.add(twin);
			if (taken > 0 && bytes > MAX_PAGE_BYTES) break;
			twins.push(twin);
			shown.push(row);
		}
		taken++;
	}
	return {
		// The page reached the end of the account only when it read fewer twins than asked for
		// and none were left out for size or work.
		done: rows.length < request.count && taken === rows.length,
		last: rows[taken - 1]?.uuid,
		// How many rows the page examined: those up to `last`.
		taken,
		twins,
		shown,
	};
}

// The page's size in UTF-8 bytes once a twin is added to it, as the 4 MiB cut needs it. A UTF-16
// code unit is at most three bytes, so three bytes a character bound the size from above; only
// once that bound would pass the limit are the twins counted exactly (those taken so far, once),
// so the page is cut where an exact count cuts it, and a page far from the limit encodes and
// scans nothing.
class PageBytes {
	private total = ENVELOPE_BYTES;
	private exact = false;

	constructor(private readonly taken: readonly string[]) {}

	add(twin: string): number {
		if (!this.exact && this.total + 3 * twin.length + 1 > MAX_PAGE_BYTES) {
			this.exact = true;
			this.total = this.taken.reduce((sum, text) => sum + utf8Bytes(text) + 1, ENVELOPE_BYTES);
		}
		this.total += (this.exact ? utf8Bytes(twin) : 3 * twin.length) + 1;
		return this.total;
	}
}

// Whether the evaluator accepts a twin whose SQL verdict was NULL. Visibility is decided first:
// `match` must not run on a hidden twin at all, or the work it spends there (a page cut short,
// a 400 for too much work) would tell what the hidden description holds.
function accepts(row: PageRow, caller: Caller, match: Rule | null, visible: Rule | null, now: number, budget: Budget) {
	const twin = {
		uuid: row.uuid,
		owner: row.owner ?? "",
		status: row.status ?? "",
		description: JSON.parse(row.description ?? "{}") as Json,
	};
	const scope = { ...scopeOf(caller, now), twin, budget };
	return (!visible || evaluate(visible, scope)) && (!match || evaluate(match, scope));
}

// The detailed shape of scan_twins (twinRecord), built from the row's columns. The JSON
// columns are spliced as stored: only this service writes them, always with JSON.stringify.
function detailed(row: PageRow): string {
	const text = JSON.stringify;
	return (
		`{"uuid":${text(row.uuid)},"owner":${text(row.owner)},"status":${text(row.status)},"updated_ts":${text(row.updated_ts)},` +
		`"description":${row.description ?? "{}"},"creation_certificate":${row.creation_certificate ?? "{}"},` +
		`"termination_certificate":${row.termination_certificate ?? "null"}}`
	);
}

// The answer of scan_twins as JSON text.
export function pageJson(cursor: string | null, twins: string[]): string {
	return `{"cursor":${JSON.stringify(cursor)},"twins":[${twins.join(",")}]}`;
}

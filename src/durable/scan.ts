import { sql } from "drizzle-orm";
import type { Database } from "../db/client";
import { type Json, type Rule } from "../rules/ast";
import type { Columns } from "../rules/compile";
import { compileRule } from "../rules/compile";
import { evaluate } from "../rules/evaluate";
import type { Caller } from "../policy/caller";
import { ruleOf, scopeOf } from "../rules/visibility";

export type ScanRequest = { count: number; match?: string; details: boolean };

type PageRow = {
	uuid: string;
	verdict: number | null;
	owner: string | null;
	status: string | null;
	description: string | null;
	creation_certificate: string | null;
	termination_certificate: string | null;
	updated_ts: number | null;
};

const COLUMNS: Columns = { uuid: "uuid", owner: "owner", status: "status", description: "description" };

// One page: the next `count` twins of the account after `after`, in uuid order, through the
// (owner, uuid) index: no OFFSET, so a page costs the same wherever it is in the account.
// The rule's SQL answers 1, 0 or NULL per twin; the detailed columns come back only where
// they are needed (to show the twin, or to let the evaluator decide a NULL).
export async function readPage(db: Database, caller: Caller, after: string, request: ScanRequest, now: number) {
	const match = ruleOf(request.match);
	// Every twin of the page is the caller's account's, so without a twin rule all are visible.
	// `match` only ever sees visible twins: otherwise it would probe hidden descriptions.
	const visible = request.details || match ? ruleOf(caller.rules.twin) : null;
	const conditions = [match, visible].filter((rule) => rule !== null).map((rule) => compileRule(rule, scopeOf(caller, now), COLUMNS));
	const verdict = conditions.length ? conditions.join(" AND ") : "1";
	const keep = sql.raw(request.details ? "verdict IS NOT 0" : "verdict IS NULL");

	const rows = (await db.all(sql`
		SELECT uuid, verdict,
			CASE WHEN ${keep} THEN owner END AS owner,
			CASE WHEN ${keep} THEN status END AS status,
			CASE WHEN ${keep} THEN description END AS description,
			CASE WHEN ${keep} THEN creation_certificate END AS creation_certificate,
			CASE WHEN ${keep} THEN termination_certificate END AS termination_certificate,
			CASE WHEN ${keep} THEN updated_ts END AS updated_ts
		FROM (
			SELECT *, (${sql.raw(verdict)}) AS verdict FROM twins
			WHERE owner = ${caller.account} AND uuid > ${after}
			ORDER BY uuid LIMIT ${request.count}
		)
		ORDER BY uuid`)) as PageRow[];

	const accepted = rows.filter((row) => row.verdict === 1 || (row.verdict === null && decide(row, caller, match, visible, now)));
	return {
		examined: rows.length,
		last: rows.at(-1)?.uuid,
		twins: accepted.map((row) => (request.details ? detailed(row) : row.uuid)),
	};
}

function decide(row: PageRow, caller: Caller, match: Rule | null, visible: Rule | null, now: number) {
	const twin = { uuid: row.uuid, owner: row.owner ?? "", status: row.status ?? "", description: JSON.parse(row.description ?? "{}") as Json };
	const scope = { ...scopeOf(caller, now), twin };
	return (!match || evaluate(match, scope)) && (!visible || evaluate(visible, scope));
}

function detailed(row: PageRow) {
	return {
		uuid: row.uuid,
		owner: row.owner,
		status: row.status,
		updated_ts: row.updated_ts,
		description: JSON.parse(row.description ?? "{}"),
		creation_certificate: JSON.parse(row.creation_certificate ?? "{}"),
		termination_certificate: row.termination_certificate ? JSON.parse(row.termination_certificate) : null,
	};
}

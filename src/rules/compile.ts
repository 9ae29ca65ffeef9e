import { classOf, type CompareOp, type Json, type Root, type Rule } from "./ast";
import { compare, step } from "./evaluate";
import { BudgetExceeded } from "./strings";
import { type Scope, type TwinColumn, VARIABLES } from "./variables";

// Compiles a rule to a SQL expression over one twin row that yields 1 (true), 0 (false) or
// NULL (SQL cannot decide: regular expressions, deep comparisons of lists and objects, and
// substrings: SQLite's instr() is a naive O(n*m) search that would hold the shared database,
// so the Worker decides those in linear time, within the page's budget). The
// caller keeps rows where it is not 0 and asks the evaluator about the NULL ones. SQL's
// AND, OR and NOT treat NULL as "unknown", so the answer is never wrong, only sometimes absent.
//
// Everything the user and the clock contribute is a constant here; only the twin varies.
// Constants are written into the SQL as escaped literals rather than bound, because D1 allows
// 100 bound parameters and a 1024-character rule can hold more literals than that.

export type Columns = Record<TwinColumn, string>;

// D1 refuses statements over 100 KB; past this, the evaluator decides every row.
const MAX_SQL_LENGTH = 50_000;

// Thrown as soon as the SQL being built passes MAX_SQL_LENGTH: `in` over a list copies its
// item's SQL once per element, so nested `in`s multiply the length, and a short rule would
// build strings far past any limit (or past what the runtime can hold) before being measured.
class SqlTooLong extends Error {}

function sized(sql: string): string {
	if (sql.length > MAX_SQL_LENGTH) throw new SqlTooLong();
	return sql;
}

type Operand =
	| { kind: "const"; value: Json }
	| { kind: "dyn"; cls: string; val: string; json?: string }
	| { kind: "list"; items: Operand[] }
	| { kind: "unknown" };

// Comparisons of constants are decided here, charged to `scope.budget` as the evaluator's are.
// A rule too long in SQL or too costly to decide here is left to the evaluator, which charges
// the same budget per twin and so stops the page (or refuses it) where it must.
export function compileRule(rule: Rule, scope: Omit<Scope, "twin">, columns: Columns): string {
	try {
		return new Compiler(scope, columns).bool(rule);
	} catch (error) {
		if (error instanceof SqlTooLong || error instanceof BudgetExceeded) return "NULL";
		throw error;
	}
}

export function sqlString(text: string): string {
	// NUL cannot travel inside a literal; SQLite's char(0) stands in for it.
	return text
		.split("\0")
		.map((part) => `'${part.replaceAll("'", "''")}'`)
		.join(" || char(0) || ");
}

function sqlScalar(value: Json): string {
	if (value === null) return "NULL";
	if (typeof value === "boolean") return value ? "1" : "0";
	// Stored rules from before finite literals were required may still hold an infinity;
	// SQLite reads an overflowing literal as one.
	if (typeof value === "number")
		return Number.isFinite(value) ? `(${String(value)})` : value > 0 ? "(1e999)" : "(-1e999)";
	if (typeof value === "string") return sqlString(value);
	return "NULL";
}

const SCALAR_CLASSES = new Set(["bool", "number", "string"]);
const JSON_EACH_MATCH: Record<string, (literal: string) => string> = {
	null: () => "e.type = 'null'",
	bool: (l) => `e.type = ${l === "1" ? "'true'" : "'false'"}`,
	number: (l) => `(e.type IN ('integer', 'real') AND e.atom = ${l})`,
	string: (l) => `(e.type = 'text' AND e.atom = ${l})`,
};

class Compiler {
	constructor(
		private readonly scope: Omit<Scope, "twin">,
		private readonly columns: Columns,
	) {}

	bool(rule: Rule): string {
		return sized(this.unsized(rule));
	}

	private unsized(rule: Rule): string {
		switch (rule.kind) {
			case "not":
				return `(NOT ${this.bool(rule.arg)})`;
			case "logical":
				return `(${this.bool(rule.left)} ${rule.op.toUpperCase()} ${this.bool(rule.right)})`;
			case "compare":
				return this.compare(rule.op, this.operand(rule.left), this.operand(rule.right));
			default: {
				const value = this.operand(rule);
				if (value.kind === "const") return value.value === true ? "1" : "0";
				if (value.kind === "dyn") return `(${value.cls} = 'bool' AND ${value.val} = 1)`;
				return value.kind === "list" ? "0" : "NULL";
			}
		}
	}

	private operand(rule: Rule): Operand {
		switch (rule.kind) {
			case "literal":
				return { kind: "const", value: rule.value };
			case "list": {
				const items = rule.items.map((item) => this.operand(item));
				if (items.every((i) => i.kind === "const")) {
					return { kind: "const", value: items.map((i) => (i as { value: Json }).value) };
				}
				return { kind: "list", items };
			}
			case "var":
				return this.variable(rule.root, rule.path);
			default:
				return { kind: "dyn", cls: "'bool'", val: this.bool(rule) };
		}
	}

	// Where the root comes from decides the operand: the caller, the clock and any binding
	// (none in a twin rule or `match`: null) are constants; only the twin's columns vary.
	private variable(root: Root, path: (string | number)[]): Operand {
		const variable = VARIABLES[root];
		if (!variable) return path.length > 0 ? { kind: "const", value: null } : { kind: "unknown" };
		if (variable.source !== "twin")
			return { kind: "const", value: path.reduce<Json>(step, variable.value(this.scope)) };
		if (variable.column !== "description") {
			// twin, owner and twin_status are strings: they have no members.
			if (path.length > 0) return { kind: "const", value: null };
			return { kind: "dyn", cls: "'string'", val: this.columns[variable.column] };
		}
		const jsonPath = toJsonPath(path);
		if (jsonPath === undefined) return { kind: "unknown" };
		if (jsonPath === null) return { kind: "const", value: null };
		const d = this.columns.description;
		return {
			kind: "dyn",
			cls: `(CASE json_type(${d}, ${jsonPath}) WHEN 'true' THEN 'bool' WHEN 'false' THEN 'bool' WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' WHEN 'array' THEN 'array' WHEN 'object' THEN 'object' ELSE 'null' END)`,
			val: `json_extract(${d}, ${jsonPath})`,
			json: jsonPath,
		};
	}

	private compare(op: CompareOp, left: Operand, right: Operand): string {
		if (left.kind === "unknown" || right.kind === "unknown") return "NULL";
		if (left.kind === "const" && right.kind === "const")
			return compare(op, left.value, right.value, this.scope.budget) ? "1" : "0";
		switch (op) {
			case "==":
			case "!=":
				return this.equal(left, right, op === "!=");
			case "in":
				return this.contains(right, left);
			case "=~":
			case "!~": {
				const notString = [left, right].some((o) => o.kind !== "dyn" && classOf(asConst(o)) !== "string");
				if (notString) return "0";
				const cls = [left, right].map((o) => (o.kind === "dyn" ? o.cls : "'string'"));
				return `(CASE WHEN ${cls[0]} = 'string' AND ${cls[1]} = 'string' THEN NULL ELSE 0 END)`;
			}
			default:
				return this.order(op, left, right);
		}
	}

	// A list is an array whose equality SQL leaves to the evaluator.
	private equal(left: Operand, right: Operand, negate: boolean): string {
		const [a, b] = left.kind === "const" ? [right, left] : [left, right];
		const onNull = negate ? "1" : "0";
		const a1 = toDyn(a);
		if (b.kind === "const") {
			const cls = classOf(b.value);
			if (cls === "null") return `(${a1.cls} ${negate ? "<>" : "="} 'null')`;
			const same = SCALAR_CLASSES.has(cls) ? `${a1.val} ${negate ? "<>" : "="} ${sqlScalar(b.value)}` : "NULL";
			return `(CASE ${a1.cls} WHEN '${cls}' THEN ${same} WHEN 'null' THEN ${onNull} ELSE 0 END)`;
		}
		const b1 = toDyn(b);
		return `(CASE WHEN ${a1.cls} = 'null' OR ${b1.cls} = 'null' THEN (${a1.cls} ${negate ? "<>" : "="} ${b1.cls}) WHEN ${a1.cls} <> ${b1.cls} THEN 0 WHEN ${a1.cls} IN ('array', 'object') THEN NULL ELSE (${a1.val} ${negate ? "<>" : "="} ${b1.val}) END)`;
	}

	private order(op: string, left: Operand, right: Operand): string {
		if (left.kind === "list" || right.kind === "list") return "0";
		const [l, r] = [toDyn(left), toDyn(right)];
		return `(CASE WHEN ${l.cls} = ${r.cls} AND ${l.cls} IN ('number', 'string') THEN (${l.val} ${op} ${r.val}) ELSE 0 END)`;
	}

	private contains(container: Operand, item: Operand): string {
		if (container.kind === "list")
			return anyOf(container.items.map((element) => () => this.compare("==", item, element)));
		if (item.kind === "list") item = { kind: "dyn", cls: "'array'", val: "NULL" };
		if (container.kind === "const") {
			const value = container.value;
			const it = toDyn(item);
			if (typeof value === "string") return `(CASE ${it.cls} WHEN 'string' THEN NULL ELSE 0 END)`;
			if (Array.isArray(value))
				return anyOf(value.map((element) => () => this.compare("==", item, { kind: "const", value: element })));
			if (value !== null && typeof value === "object") {
				const keys = Object.keys(value).map(sqlString);
				return keys.length ? `(CASE ${it.cls} WHEN 'string' THEN ${it.val} IN (${keys.join(", ")}) ELSE 0 END)` : "0";
			}
			return "0";
		}
		if (container.kind !== "dyn") return "NULL";
		const it = toDyn(item);
		const asString = `(CASE ${it.cls} WHEN 'string' THEN NULL ELSE 0 END)`;
		if (!container.json) return `(CASE ${container.cls} WHEN 'string' THEN ${asString} ELSE 0 END)`;

		const each = `json_each(${this.columns.description}, ${container.json}) AS e`;
		const asKey = `(CASE ${it.cls} WHEN 'string' THEN EXISTS (SELECT 1 FROM ${each} WHERE e.key = ${it.val}) ELSE 0 END)`;
		let asElement = "NULL";
		if (item.kind === "const" && classOf(item.value) in JSON_EACH_MATCH) {
			asElement = `EXISTS (SELECT 1 FROM ${each} WHERE ${JSON_EACH_MATCH[classOf(item.value)](sqlScalar(item.value))})`;
		}
		return `(CASE ${container.cls} WHEN 'string' THEN ${asString} WHEN 'object' THEN ${asKey} WHEN 'array' THEN ${asElement} ELSE 0 END)`;
	}
}

// The OR of one test per element, measured as each is added.
function anyOf(tests: (() => string)[]): string {
	let length = 0;
	const built: string[] = [];
	for (const test of tests) {
		const sql = test();
		length += sql.length + 4;
		if (length > MAX_SQL_LENGTH) throw new SqlTooLong();
		built.push(sql);
	}
	return built.length ? `(${built.join(" OR ")})` : "0";
}

function asConst(operand: Operand): Json {
	return operand.kind === "const" ? operand.value : [];
}

function toDyn(operand: Operand): { cls: string; val: string } {
	if (operand.kind === "dyn") return operand;
	if (operand.kind === "const") return { cls: `'${classOf(operand.value)}'`, val: sqlScalar(operand.value) };
	return { cls: "'array'", val: "NULL" };
}

// SQLite JSON path of a member chain: undefined when a key cannot be written in one (SQLite
// has no escape for '"' in a quoted label), null when the chain can only read null.
function toJsonPath(path: (string | number)[]): string | null | undefined {
	let out = "$";
	for (const key of path) {
		if (typeof key === "number") {
			if (!Number.isInteger(key) || key < 0 || key > Number.MAX_SAFE_INTEGER) return null;
			out += `[${key}]`;
		} else {
			if (/["\\\0]/.test(key)) return undefined;
			out += `."${key}"`;
		}
	}
	return sqlString(out);
}

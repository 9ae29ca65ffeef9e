import jsep from "jsep";
import { type CompareOp, type Json, type Root, ROOTS, type Rule } from "./ast";
import { regexError } from "./strings";

export const MAX_RULE_LENGTH = 1024;
export const MAX_RULE_DEPTH = 32;

// jsep is configured once, for this language only: no arithmetic, no bitwise or JavaScript
// logical operators, no `this`. Unary operators bind tighter than any binary one, so
// `not a == b` reads `(not a) == b`: write `not (a == b)`.
jsep.removeAllBinaryOps();
jsep.removeAllUnaryOps();
jsep.addBinaryOp("or", 1);
jsep.addBinaryOp("and", 2);
for (const op of ["==", "!=", "=~", "!~", "in"]) jsep.addBinaryOp(op, 6);
for (const op of ["<", "<=", ">", ">="]) jsep.addBinaryOp(op, 7);
jsep.addUnaryOp("not");
jsep.addUnaryOp("-");

const COMPARE_OPS = new Set<string>(["==", "!=", "<", "<=", ">", ">=", "in", "=~", "!~"]);
const ROOT_NAMES = new Set<string>(ROOTS);

export type ParseResult = { ok: true; rule: Rule } | { ok: false; position: number; message: string };

class RuleError extends Error {
	constructor(
		message: string,
		readonly position: number,
	) {
		super(message);
	}
}

export function parseRule(text: string): ParseResult {
	if (text.length > MAX_RULE_LENGTH) {
		return { ok: false, position: MAX_RULE_LENGTH, message: `longer than ${MAX_RULE_LENGTH} characters` };
	}
	try {
		let tree: jsep.Expression;
		try {
			tree = jsep(text);
		} catch (error) {
			const { index, description } = error as { index?: number; description?: string };
			throw new RuleError(description ?? String(error), index ?? 0);
		}
		const rule = normalize(tree, text, 1);
		return { ok: true, rule };
	} catch (error) {
		if (error instanceof RuleError) return { ok: false, position: error.position, message: error.message };
		// jsep can fail in ways it does not describe (deep recursion on hostile input).
		return { ok: false, position: 0, message: "cannot parse the rule" };
	}
}

// The parser's nodes carry no positions, so a semantic error points at the first place the
// offending token appears in the text.
function at(text: string, token: string) {
	return Math.max(0, text.indexOf(token));
}

function normalize(node: jsep.Expression, text: string, depth: number): Rule {
	if (depth > MAX_RULE_DEPTH) throw new RuleError(`nested deeper than ${MAX_RULE_DEPTH} levels`, 0);
	const next = (child: jsep.Expression) => normalize(child, text, depth + 1);

	switch (node.type) {
		case "Literal": {
			const value = (node as jsep.Literal).value;
			if (typeof value === "number" && !Number.isFinite(value)) {
				throw new RuleError("number out of range", at(text, String((node as jsep.Literal).raw)));
			}
			return { kind: "literal", value: value as Json };
		}
		case "Identifier":
		case "MemberExpression":
			return variable(node, text);
		case "ArrayExpression": {
			const elements = (node as jsep.ArrayExpression).elements;
			if (elements.some((e) => e === null)) throw new RuleError("empty element in a list", at(text, ","));
			return { kind: "list", items: elements.map((e) => next(e as jsep.Expression)) };
		}
		case "UnaryExpression": {
			const { operator, argument } = node as jsep.UnaryExpression;
			if (operator === "not") return { kind: "not", arg: next(argument) };
			// A minus sign only makes negative number literals.
			if (argument.type === "Literal" && typeof (argument as jsep.Literal).value === "number") {
				next(argument); // refuses a non-finite number (`-1e999`) as the literal alone would be
				return { kind: "literal", value: -((argument as jsep.Literal).value as number) };
			}
			throw new RuleError("'-' applies only to numbers", at(text, "-"));
		}
		case "BinaryExpression": {
			const { operator, left, right } = node as jsep.BinaryExpression;
			if (operator === "and" || operator === "or") {
				return { kind: "logical", op: operator, left: next(left), right: next(right) };
			}
			if (COMPARE_OPS.has(operator)) {
				if ((operator === "=~" || operator === "!~") && right.type === "Literal")
					checkPattern(right as jsep.Literal, text);
				return { kind: "compare", op: operator as CompareOp, left: next(left), right: next(right) };
			}
			throw new RuleError(`unknown operator '${operator}'`, at(text, operator));
		}
		case "CallExpression":
			throw new RuleError("function calls are not allowed", at(text, "("));
		case "ConditionalExpression":
			throw new RuleError("'?:' is not allowed", at(text, "?"));
		case "Compound":
		case "SequenceExpression":
			throw new RuleError("a rule is a single expression", at(text, ","));
		default:
			throw new RuleError(`'${node.type}' is not allowed`, 0);
	}
}

// A literal pattern is known when the rule is written: one RE2 cannot run is refused then, at
// the place in the pattern that RE2 names.
function checkPattern(literal: jsep.Literal, text: string) {
	if (typeof literal.value !== "string") return;
	const error = regexError(literal.value);
	if (error) throw new RuleError(error.message, at(text, literal.raw) + 1 + error.offset);
}

// `TWIN.a.b[0]["c"]` becomes { root: "TWIN", path: ["a", "b", 0, "c"] }. Indexes must be
// literals, so every path is known when the rule is written.
function variable(node: jsep.Expression, text: string): Rule {
	const path: (string | number)[] = [];
	let current = node;
	while (current.type === "MemberExpression") {
		const member = current as jsep.MemberExpression;
		if (member.optional) throw new RuleError("'?.' is not allowed", at(text, "?."));
		const property = member.property;
		if (!member.computed && property.type === "Identifier") {
			path.unshift((property as jsep.Identifier).name);
		} else if (property.type === "Literal" && ["string", "number"].includes(typeof (property as jsep.Literal).value)) {
			path.unshift((property as jsep.Literal).value as string | number);
		} else {
			throw new RuleError("an index must be a string or number literal", at(text, "["));
		}
		current = member.object;
	}
	if (current.type !== "Identifier") throw new RuleError("only variables have members", at(text, "."));
	const name = (current as jsep.Identifier).name;
	if (!ROOT_NAMES.has(name)) throw new RuleError(`unknown variable '${name}'`, at(text, name));
	return { kind: "var", root: name as Root, path };
}

import * as z from "zod/mini";
import { en } from "zod/locales";
import { ApiError, type ErrorDetail } from "./errors";

// Messages that tell the caller what to send, in place of zod's "Invalid input: expected
// string, received undefined": a missing field is "Required", a wrong type names the type
// expected and the one sent, and a value that fits no branch of a union names them all.
// Patterns and limits carry their own messages where the schemas are made.
const kind = (expected: string) =>
	expected === "array" ? "a list" : `${/^[aeiou]/.test(expected) ? "an" : "a"} ${expected}`;
const sent = (input: unknown) => (input === null ? "null" : Array.isArray(input) ? "a list" : kind(typeof input));
type Issue = { code?: string; expected?: string; input?: unknown; errors?: { code?: string; expected?: string }[][] };
// zod/mini loads no locale: English gives the messages the schemas do not set themselves.
z.config(en());
z.config({
	customError: (raw) => {
		const issue = raw as Issue;
		if (issue.code === "invalid_type" && issue.expected) {
			return issue.input === undefined
				? `Required: ${kind(issue.expected)}`
				: `Must be ${kind(issue.expected)}, not ${sent(issue.input)}`;
		}
		if (issue.code === "invalid_union" && issue.input === undefined) return "Required";
		if (
			issue.code === "invalid_union" &&
			issue.errors?.every((branch) => branch[0]?.code === "invalid_type" && branch[0].expected)
		) {
			const kinds = issue.errors.map((branch) =>
				branch[0].expected === "null" ? "null" : kind(branch[0].expected as string),
			);
			return `Must be ${kinds.join(" or ")}, not ${sent(issue.input)}`;
		}
		return undefined;
	},
});

// One detail per failing field; an unknown field is reported under its own name.
export function validate<S extends z.ZodMiniType>(schema: S, value: unknown): z.infer<S> {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const details: ErrorDetail[] = result.error.issues.flatMap((issue) => {
		if (issue.code === "unrecognized_keys")
			return issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: "Unknown field" }));
		// A key of a record that breaks its pattern: the key schema's own message says what it must be.
		if (issue.code === "invalid_key")
			return [{ path: pathOf(issue.path), message: issue.issues.map((inner) => inner.message).join("; ") }];
		return [{ path: pathOf(issue.path), message: issue.message }];
	});
	throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
}

function pathOf(path: readonly PropertyKey[]): string {
	return path.map(String).join(".") || "body";
}

// The query as one value per name. A name given twice is refused, naming it: the last value
// would otherwise win without a word (`?view=tree&view=list`), and a list is one
// comma-separated value (docs/operations.md).
export function queryOf(params: URLSearchParams): Record<string, string> {
	const seen = new Set<string>();
	for (const name of params.keys()) {
		if (seen.has(name)) {
			const message = "Given more than once: send it once (a list is one comma-separated value)";
			throw new ApiError("validation", { description: `${name}: ${message}`, details: [{ path: name, message }] });
		}
		seen.add(name);
	}
	// fromEntries makes every name an own key, `__proto__` too (an assignment would set the
	// object's prototype instead, and the name would vanish).
	return Object.fromEntries(params);
}

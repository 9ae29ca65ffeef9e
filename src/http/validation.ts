import type { z } from "zod";
import { ApiError, type ErrorDetail } from "../base/errors";

// One detail per failing field; an unknown field is reported under its own name.
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const details: ErrorDetail[] = result.error.issues.flatMap((issue) => {
		if (issue.code === "unrecognized_keys") return issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: "Unknown field" }));
		// A key of a record that breaks its pattern: the key schema's own message says what it must be.
		if (issue.code === "invalid_key") return [{ path: pathOf(issue.path), message: issue.issues.map((inner) => inner.message).join("; ") }];
		return [{ path: pathOf(issue.path), message: issue.message }];
	});
	throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
}

function pathOf(path: readonly PropertyKey[]): string {
	return path.map(String).join(".") || "body";
}

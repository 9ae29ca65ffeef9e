import type { z } from "zod";
import { ApiError, type ErrorDetail } from "../base/errors";

// One detail per failing field; an unknown field is reported under its own name.
export function validate<S extends z.ZodType>(schema: S, value: unknown): z.infer<S> {
	const result = schema.safeParse(value);
	if (result.success) return result.data;
	const details: ErrorDetail[] = result.error.issues.flatMap((issue) =>
		issue.code === "unrecognized_keys"
			? issue.keys.map((key) => ({ path: pathOf([...issue.path, key]), message: "Unknown field" }))
			: [{ path: pathOf(issue.path), message: issue.message }],
	);
	throw new ApiError("validation", { description: `${details[0].path}: ${details[0].message}`, details });
}

function pathOf(path: readonly PropertyKey[]): string {
	return path.map(String).join(".") || "body";
}

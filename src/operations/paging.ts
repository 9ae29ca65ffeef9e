import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import { open, seal } from "../base/seal";
import { withMeta } from "./schemas";

// What every paged read shares: the `limit` it takes, the `cursor` it answers, and how a cursor
// is made and read. A cursor is the position of the last item a page examined, sealed under
// WEBHOOK_KEY with the read's scope (operation, caller and query) as its additional data: it
// may name an item the caller cannot see, and it holds only for the request it came from, so
// it can be neither read nor moved to another query or user. Scans keep their own cursors in
// the account's object (account/cursors.ts).

// Query `limit`: an integer from 1 to `max`.
export function pageLimit(max: number) {
	const message = `Must be an integer from 1 to ${max}`;
	return z.pipe(
		// As many digits as `max` has (10000 has five): no longer text is read as a number.
		z.pipe(z.string().check(z.regex(new RegExp(`^\\d{1,${String(max).length}}$`), message)), z.transform(Number)),
		z.number().check(z.int(), z.gte(1, message), z.lte(max, message)),
	);
}

// Any text: a cursor too long to be one of ours is refused as undecodable (400104), like any
// other that is not, without being opened.
export const cursorIn = z.string();
const MAX_CURSOR_LENGTH = 1024;
export const cursorOut = withMeta(z.nullable(z.string()), {
	description: "Give it as `cursor` for the next page; null after the last",
});

export function sealCursor(env: Env, scope: string, position: unknown[]): Promise<string> {
	return seal(env, scope, "cursor", JSON.stringify(position));
}

// The position a cursor holds, of the shape `position` describes; 400104 for a cursor that is
// not one of this read's, whatever is wrong with it.
export async function openCursor<T extends z.ZodMiniType>(
	env: Env,
	scope: string,
	cursor: string | undefined,
	position: T,
): Promise<z.infer<T> | null> {
	if (cursor === undefined) return null;
	let decoded: unknown;
	try {
		if (cursor.length <= MAX_CURSOR_LENGTH) decoded = JSON.parse(await open(env, scope, "cursor", cursor));
	} catch {
		// Not sealed by us, or not for this scope: refused below like any other shape.
	}
	const parsed = position.safeParse(decoded);
	if (parsed.success) return parsed.data;
	throw new ApiError("invalid_cursor", { description: "The cursor is invalid, or belongs to another request" });
}

import { ApiError } from "./errors";

// Ceilings of the per-account limits that wrangler.toml's vars set. get_users and
// get_user_roles answer every user or role of the account in one page, which their answers
// state as a bound (operations/schemas.ts mapOf), so a var set higher counts as its ceiling.
export const MAX_USERS_CEILING = 10_000;
export const MAX_ROLES_CEILING = 1_000;
// A twin's docs of one account; also get_twin_docs's page.
export const MAX_TWIN_DOCS_CEILING = 1_000;

export function accountLimit(value: string | number, ceiling: number): number {
	return Math.min(Number(value), ceiling);
}
// get_identity_providers answers every provider of the account in one page.
export const MAX_IDENTITY_PROVIDERS_CEILING = 100;
// get_indexes_tables answers every table of the account in one page.
export const MAX_INDEXES_TABLES_CEILING = 100;
export const MAX_TIMESERIES_TABLES_CEILING = 100;

// Twin and user descriptions: at most 32 KiB as compact JSON (UTF-8), which bounds what a rule
// and a scan page have to read per twin. A description merged from a patch (RFC 7396) is held
// to it once merged, with the refusal validation gives a description sent whole.
export const MAX_DESCRIPTION_BYTES = 32 * 1024;
export const DESCRIPTION_TOO_LARGE = `Must be at most ${MAX_DESCRIPTION_BYTES} bytes as compact JSON`;

export function descriptionTooLarge(): ApiError {
	return new ApiError("validation", {
		description: `description: ${DESCRIPTION_TOO_LARGE}`,
		details: [{ path: "description", message: DESCRIPTION_TOO_LARGE }],
	});
}

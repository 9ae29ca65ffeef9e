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
// get_indexes_tables answers every table of the account in one page.
export const MAX_INDEXES_TABLES_CEILING = 100;

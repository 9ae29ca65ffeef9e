import { OPERATION_NAMES } from "./names";

// The operation names of the original API (its official client's names). A statement written
// for the original service is accepted as it is: names this service does not route yet keep
// their meaning, so a deny statement allows them the day they are routed.
export const ORIGINAL_OPERATION_NAMES = [
	"get_account", "update_account", "get_batches", "create_batch", "get_batch", "delete_batch", "update_batch",
	"trace", "who_am_i", "get_users", "create_user", "get_user", "delete_user", "update_user",
	"get_user_secret", "create_user_secret_pin", "delete_user_secret", "update_user_secret",
	"create_user_secret", "create_user_token", "refresh_user_token", "get_user_roles", "create_user_role",
	"get_user_role", "delete_user_role", "update_user_role", "resolve_twin_identity", "scan_twins",
	"create_twin", "get_twin", "terminate_twin", "update_twin", "get_twin_identities", "create_twin_identity",
	"get_twin_identity", "delete_twin_identity", "update_twin_identity", "get_twin_ledger_entry",
	"add_twin_ledger_entry", "delete_twin_ledger_entry", "update_twin_ledger_entry",
	"get_twin_ledger_entry_value", "update_twin_ledger_entry_value", "get_twin_ledger_entry_history",
	"get_twin_docs", "attach_twin_doc", "delete_twin_docs", "get_twin_doc", "delete_twin_doc",
	"update_twin_doc", "download_doc", "create_upload_url", "invalidate_upload_url", "get_databases",
	"get_database", "update_database", "get_database_access", "update_database_user_access",
	"update_database_ip_access", "get_timeseries_table", "delete_timeseries_table", "update_timeseries_table",
	"get_timeseries_tables", "create_timeseries_table", "truncate_timeseries_table", "get_log",
	"update_notifications_account_access", "get_notifications_access", "webhook_subscribe",
	"webhook_confirm_subscription", "webhook_unsubscribe", "webhook_refresh_subscription", "get_indexes_table",
	"delete_indexes_table", "update_indexes_table", "get_indexes_tables", "create_indexes_table",
	"truncate_indexes_table", "get_account_usage", "get_user_usage", "get_stickers", "put_sticker",
	"get_sticker", "remove_sticker", "list_stickers",
] as const;

// What `statement.actions` may list, and what grant checks compare over.
export const STATEMENT_VOCABULARY: readonly string[] = [...new Set<string>([...OPERATION_NAMES, ...ORIGINAL_OPERATION_NAMES])];

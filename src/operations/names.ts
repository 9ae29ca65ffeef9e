// Every operation name the service routes. Role statements list these names, so the list is
// the vocabulary of `statement.actions`; test/router.test.ts keeps it equal to the route table.
export const OPERATION_NAMES = [
	"who_am_i",
	"create_user",
	"get_users",
	"get_user",
	"update_user",
	"delete_user",
	"create_user_secret_pin",
	"create_user_secret",
	"get_user_secret",
	"update_user_secret",
	"delete_user_secret",
	"create_user_role",
	"get_user_roles",
	"get_user_role",
	"update_user_role",
	"delete_user_role",
	"create_twin",
	"scan_twins",
	"get_twin",
	"update_twin",
	"terminate_twin",
	"webhook_subscribe",
	"confirm_a_webhook_subscription",
	"webhook_refresh_subscription",
	"webhook_unsubscribe",
	"create_account",
] as const;

export type OperationName = (typeof OPERATION_NAMES)[number];

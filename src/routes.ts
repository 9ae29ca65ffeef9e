import type { Route } from "./http/route";
import { loadOnce } from "./base/load-once";

// The route table: every operation once, under the path of the interface. Each operation's
// module is loaded on its route's first request (src/http/route.ts).
const table: Route[] = [
	{ method: "GET", path: "/whoami", load: () => import("./operations/whoami").then((m) => m.whoAmI) },
	{ method: "GET", path: "/account", load: () => import("./operations/account").then((m) => m.getAccount) },
	{ method: "PATCH", path: "/account", load: () => import("./operations/account").then((m) => m.updateAccount) },
	{ method: "POST", path: "/trace", load: () => import("./operations/trace").then((m) => m.trace) },
	{
		method: "POST",
		path: "/account/services/indexes",
		load: () => import("./operations/indexes").then((m) => m.createIndexesTable),
	},
	{
		method: "GET",
		path: "/account/services/indexes",
		load: () => import("./operations/indexes").then((m) => m.getIndexesTables),
	},
	{
		method: "GET",
		path: "/account/services/indexes/:index",
		load: () => import("./operations/indexes").then((m) => m.getIndexesTable),
	},
	{
		method: "PATCH",
		path: "/account/services/indexes/:index",
		load: () => import("./operations/indexes").then((m) => m.updateIndexesTable),
	},
	{
		method: "DELETE",
		path: "/account/services/indexes/:index",
		load: () => import("./operations/indexes").then((m) => m.deleteIndexesTable),
	},
	{
		method: "GET",
		path: "/account/services/indexes/:index/data",
		load: () => import("./operations/indexes").then((m) => m.queryIndexesTable),
	},
	{
		method: "DELETE",
		path: "/account/services/indexes/:index/data",
		load: () => import("./operations/indexes").then((m) => m.truncateIndexesTable),
	},
	{
		method: "POST",
		path: "/account/services/timeseries",
		load: () => import("./operations/timeseries").then((m) => m.createTimeseriesTable),
	},
	{
		method: "GET",
		path: "/account/services/timeseries",
		load: () => import("./operations/timeseries").then((m) => m.getTimeseriesTables),
	},
	{
		method: "GET",
		path: "/account/services/timeseries/:timeseries",
		load: () => import("./operations/timeseries").then((m) => m.getTimeseriesTable),
	},
	{
		method: "PATCH",
		path: "/account/services/timeseries/:timeseries",
		load: () => import("./operations/timeseries").then((m) => m.updateTimeseriesTable),
	},
	{
		method: "DELETE",
		path: "/account/services/timeseries/:timeseries",
		load: () => import("./operations/timeseries").then((m) => m.deleteTimeseriesTable),
	},
	{
		method: "DELETE",
		path: "/account/services/timeseries/:timeseries/data",
		load: () => import("./operations/timeseries").then((m) => m.truncateTimeseriesTable),
	},
	{
		method: "GET",
		path: "/account/services/timeseries/:timeseries/data",
		load: () => import("./operations/timeseries-query").then((m) => m.queryTimeseriesTable),
	},
	{ method: "POST", path: "/token", load: () => import("./operations/tokens").then((m) => m.createUserToken) },
	{ method: "POST", path: "/token/refresh", load: () => import("./operations/tokens").then((m) => m.refreshUserToken) },
	{
		method: "POST",
		path: "/token/exchange",
		load: () => import("./operations/token-exchange").then((m) => m.exchangeUserToken),
	},
	{
		method: "POST",
		path: "/account/identity-providers",
		load: () => import("./operations/identity-providers").then((m) => m.createIdentityProvider),
	},
	{
		method: "GET",
		path: "/account/identity-providers",
		load: () => import("./operations/identity-providers").then((m) => m.getIdentityProviders),
	},
	{
		method: "GET",
		path: "/account/identity-providers/:provider",
		load: () => import("./operations/identity-providers").then((m) => m.getIdentityProvider),
	},
	{
		method: "PATCH",
		path: "/account/identity-providers/:provider",
		load: () => import("./operations/identity-providers").then((m) => m.updateIdentityProvider),
	},
	{
		method: "DELETE",
		path: "/account/identity-providers/:provider",
		load: () => import("./operations/identity-providers").then((m) => m.deleteIdentityProvider),
	},
	{ method: "POST", path: "/users", load: () => import("./operations/users").then((m) => m.createUser) },
	{ method: "GET", path: "/users", load: () => import("./operations/users").then((m) => m.getUsers) },
	{ method: "GET", path: "/users/:user", load: () => import("./operations/users").then((m) => m.getUser) },
	{ method: "PATCH", path: "/users/:user", load: () => import("./operations/users").then((m) => m.updateUser) },
	{ method: "DELETE", path: "/users/:user", load: () => import("./operations/users").then((m) => m.deleteUser) },
	{
		method: "POST",
		path: "/users/:user/secrets",
		load: () => import("./operations/secrets").then((m) => m.createUserSecretPin),
	},
	{
		method: "GET",
		path: "/users/:user/secrets",
		load: () => import("./operations/secrets").then((m) => m.getUserSecret),
	},
	{
		method: "PATCH",
		path: "/users/:user/secrets",
		load: () => import("./operations/secrets").then((m) => m.updateUserSecret),
	},
	{
		method: "DELETE",
		path: "/users/:user/secrets",
		load: () => import("./operations/secrets").then((m) => m.deleteUserSecret),
	},
	{
		method: "POST",
		path: "/users/:user/token",
		load: () => import("./operations/tokens").then((m) => m.issueUserToken),
	},
	{
		method: "POST",
		path: "/users/:user/external-ids",
		load: () => import("./operations/external-ids").then((m) => m.createUserExternalId),
	},
	{
		method: "GET",
		path: "/users/:user/external-ids",
		load: () => import("./operations/external-ids").then((m) => m.getUserExternalIds),
	},
	{
		method: "DELETE",
		path: "/users/:user/external-ids/:provider",
		load: () => import("./operations/external-ids").then((m) => m.deleteUserExternalId),
	},
	{
		method: "POST",
		path: "/secrets/:account/:pin",
		load: () => import("./operations/secrets").then((m) => m.createUserSecret),
	},
	{ method: "POST", path: "/roles", load: () => import("./operations/roles").then((m) => m.createUserRole) },
	{ method: "GET", path: "/roles", load: () => import("./operations/roles").then((m) => m.getUserRoles) },
	{ method: "GET", path: "/roles/:role", load: () => import("./operations/roles").then((m) => m.getUserRole) },
	{ method: "PATCH", path: "/roles/:role", load: () => import("./operations/roles").then((m) => m.updateUserRole) },
	{ method: "DELETE", path: "/roles/:role", load: () => import("./operations/roles").then((m) => m.deleteUserRole) },
	{ method: "POST", path: "/twins", load: () => import("./operations/twins").then((m) => m.createTwin) },
	{ method: "GET", path: "/twins", load: () => import("./operations/twins").then((m) => m.scanTwins) },
	{ method: "GET", path: "/twins/:twin", load: () => import("./operations/twins").then((m) => m.getTwin) },
	{ method: "PATCH", path: "/twins/:twin", load: () => import("./operations/twins").then((m) => m.updateTwin) },
	{ method: "DELETE", path: "/twins/:twin", load: () => import("./operations/twins").then((m) => m.terminateTwin) },
	{
		method: "POST",
		path: "/twins/:twin/identities",
		load: () => import("./operations/identities").then((m) => m.createTwinIdentity),
	},
	{
		method: "GET",
		path: "/twins/:twin/identities",
		load: () => import("./operations/identities").then((m) => m.getTwinIdentities),
	},
	{
		method: "GET",
		path: "/twins/:twin/identities/:identity",
		load: () => import("./operations/identities").then((m) => m.getTwinIdentity),
	},
	{
		method: "PATCH",
		path: "/twins/:twin/identities/:identity",
		load: () => import("./operations/identities").then((m) => m.updateTwinIdentity),
	},
	{
		method: "DELETE",
		path: "/twins/:twin/identities/:identity",
		load: () => import("./operations/identities").then((m) => m.deleteTwinIdentity),
	},
	{
		method: "GET",
		path: "/resolve/:identity",
		load: () => import("./operations/resolve").then((m) => m.resolveTwinIdentity),
	},
	{
		method: "POST",
		path: "/twins/:twin/ledgers/:ledger",
		load: () => import("./operations/ledgers").then((m) => m.addTwinLedgerEntry),
	},
	{
		method: "GET",
		path: "/twins/:twin/ledgers/:ledger",
		load: () => import("./operations/ledger-reads").then((m) => m.getTwinLedgerEntry),
	},
	{
		method: "PATCH",
		path: "/twins/:twin/ledgers/:ledger",
		load: () => import("./operations/ledgers").then((m) => m.updateTwinLedgerEntry),
	},
	{
		method: "DELETE",
		path: "/twins/:twin/ledgers/:ledger",
		load: () => import("./operations/ledgers").then((m) => m.deleteTwinLedgerEntry),
	},
	{
		method: "GET",
		path: "/twins/:twin/ledgers/:ledger/value",
		load: () => import("./operations/ledger-reads").then((m) => m.getTwinLedgerEntryValue),
	},
	{
		method: "PATCH",
		path: "/twins/:twin/ledgers/:ledger/value",
		load: () => import("./operations/ledgers").then((m) => m.updateTwinLedgerEntryValue),
	},
	{
		method: "GET",
		path: "/twins/:twin/ledgers/:ledger/history",
		load: () => import("./operations/ledger-reads").then((m) => m.getTwinLedgerEntryHistory),
	},
	{
		method: "POST",
		path: "/twins/:twin/stickers",
		load: () => import("./operations/stickers").then((m) => m.putSticker),
	},
	{
		method: "GET",
		path: "/twins/:twin/stickers",
		load: () => import("./operations/stickers").then((m) => m.getStickers),
	},
	{
		method: "GET",
		path: "/twins/:twin/stickers/:color",
		load: () => import("./operations/stickers").then((m) => m.getSticker),
	},
	{
		method: "DELETE",
		path: "/twins/:twin/stickers/:color",
		load: () => import("./operations/stickers").then((m) => m.removeSticker),
	},
	{ method: "GET", path: "/stickers", load: () => import("./operations/stickers").then((m) => m.listStickers) },
	{ method: "POST", path: "/cache", load: () => import("./operations/uploads").then((m) => m.createUploadUrl) },
	{
		method: "DELETE",
		path: "/cache/:handler",
		load: () => import("./operations/uploads").then((m) => m.invalidateUploadUrl),
	},
	{
		method: "PUT",
		path: "/cache/:account/:handler",
		load: () => import("./operations/uploads").then((m) => m.uploadToCache),
	},
	{ method: "POST", path: "/twins/:twin/docs", load: () => import("./operations/docs").then((m) => m.attachTwinDoc) },
	{ method: "GET", path: "/twins/:twin/docs", load: () => import("./operations/docs").then((m) => m.getTwinDocs) },
	{
		method: "DELETE",
		path: "/twins/:twin/docs",
		load: () => import("./operations/docs").then((m) => m.deleteTwinDocs),
	},
	// The name takes the rest of the path: its folders' '/' stay as they are.
	{
		method: "GET",
		path: "/twins/:twin/docs/:name+",
		load: () => import("./operations/docs").then((m) => m.getTwinDoc),
	},
	{
		method: "PATCH",
		path: "/twins/:twin/docs/:name+",
		load: () => import("./operations/docs").then((m) => m.updateTwinDoc),
	},
	{
		method: "DELETE",
		path: "/twins/:twin/docs/:name+",
		load: () => import("./operations/docs").then((m) => m.deleteTwinDoc),
	},
	{ method: "POST", path: "/batches", load: () => import("./operations/batches").then((m) => m.createBatch) },
	{ method: "GET", path: "/batches", load: () => import("./operations/batches").then((m) => m.getBatches) },
	{ method: "GET", path: "/batches/:batch", load: () => import("./operations/batches").then((m) => m.getBatch) },
	{ method: "PATCH", path: "/batches/:batch", load: () => import("./operations/batches").then((m) => m.updateBatch) },
	{ method: "DELETE", path: "/batches/:batch", load: () => import("./operations/batches").then((m) => m.deleteBatch) },
	{ method: "POST", path: "/exports", load: () => import("./operations/exports").then((m) => m.createExport) },
	{ method: "GET", path: "/exports", load: () => import("./operations/exports").then((m) => m.getExports) },
	{ method: "GET", path: "/exports/:export", load: () => import("./operations/exports").then((m) => m.getExport) },
	{ method: "PATCH", path: "/exports/:export", load: () => import("./operations/exports").then((m) => m.updateExport) },
	{
		method: "DELETE",
		path: "/exports/:export",
		load: () => import("./operations/exports").then((m) => m.deleteExport),
	},
	{
		method: "GET",
		path: "/files/:account/:handler",
		head: true,
		load: () => import("./operations/job-files").then((m) => m.downloadFile),
	},
	{
		method: "GET",
		path: "/download/:account/:handler",
		head: true,
		load: () => import("./operations/docs").then((m) => m.downloadDoc),
	},
	{
		method: "POST",
		path: "/notifications/webhooks",
		load: () => import("./operations/webhooks").then((m) => m.webhookSubscribe),
	},
	{
		method: "GET",
		path: "/notifications/webhooks",
		load: () => import("./operations/webhook-subscriptions").then((m) => m.getWebhookSubscriptions),
	},
	// Before /notifications/webhooks/:account, although that one segment could not match these.
	{
		method: "GET",
		path: "/notifications/webhooks/subscriptions/:subscription",
		load: () => import("./operations/webhook-subscriptions").then((m) => m.getWebhookSubscription),
	},
	{
		method: "DELETE",
		path: "/notifications/webhooks/subscriptions/:subscription",
		load: () => import("./operations/webhook-subscriptions").then((m) => m.deleteWebhookSubscription),
	},
	{
		method: "GET",
		path: "/notifications/webhooks/subscriptions/:subscription/deliveries",
		load: () => import("./operations/webhook-subscriptions").then((m) => m.getWebhookDeliveries),
	},
	{
		method: "POST",
		path: "/notifications/webhooks/subscriptions/:subscription/confirmation",
		load: () => import("./operations/webhook-subscriptions").then((m) => m.resendWebhookConfirmation),
	},
	{
		method: "GET",
		path: "/notifications/webhooks/access",
		load: () => import("./operations/notifications-access").then((m) => m.getNotificationsAccess),
	},
	{
		method: "PATCH",
		path: "/notifications/webhooks/access/accounts/:account",
		load: () => import("./operations/notifications-access").then((m) => m.updateNotificationsAccountAccess),
	},
	{
		method: "GET",
		path: "/notifications/stream",
		load: () => import("./operations/streams").then((m) => m.streamNotifications),
	},
	{
		method: "POST",
		path: "/notifications/stream/tokens",
		load: () => import("./operations/streams").then((m) => m.createStreamToken),
	},
	{ method: "GET", path: "/usage", load: () => import("./operations/usage").then((m) => m.getAccountUsage) },
	{ method: "GET", path: "/usage/:user", load: () => import("./operations/usage").then((m) => m.getUserUsage) },
	{
		method: "GET",
		path: "/notifications/webhooks/:account",
		load: () => import("./operations/webhooks").then((m) => m.confirmSubscription),
	},
	{
		method: "PATCH",
		path: "/notifications/webhooks/:account",
		load: () => import("./operations/webhooks").then((m) => m.refreshSubscription),
	},
	{
		method: "DELETE",
		path: "/notifications/webhooks/:account",
		load: () => import("./operations/webhooks").then((m) => m.unsubscribe),
	},
	{ method: "GET", path: "/log", load: () => import("./operations/log").then((m) => m.getLog) },
	{ method: "POST", path: "/admin/accounts", load: () => import("./operations/accounts").then((m) => m.createAccount) },
	{ method: "GET", path: "/admin/shards", load: () => import("./operations/shards").then((m) => m.getShards) },
	{
		method: "POST",
		path: "/admin/shards/moves",
		load: () => import("./operations/shards").then((m) => m.createShardMove),
	},
	{
		method: "GET",
		path: "/admin/shards/moves/:bucket",
		load: () => import("./operations/shards").then((m) => m.getShardMove),
	},
	{
		method: "DELETE",
		path: "/admin/shards/moves/:bucket",
		load: () => import("./operations/shards").then((m) => m.deleteShardMove),
	},
];

export const routes: Route[] = table.map((route) => ({ ...route, load: loadOnce(route.load) }));

import { createAccount } from "./operations/accounts";
import type { Route } from "./http/route";
import {
	createUserSecret,
	createUserSecretPin,
	deleteUserSecret,
	getUserSecret,
	updateUserSecret,
} from "./operations/secrets";
import {
	createTwinIdentity,
	deleteTwinIdentity,
	getTwinIdentities,
	getTwinIdentity,
	updateTwinIdentity,
} from "./operations/identities";
import { resolveTwinIdentity } from "./operations/resolve";
import { getTwinLedgerEntry, getTwinLedgerEntryHistory, getTwinLedgerEntryValue } from "./operations/ledger-reads";
import {
	addTwinLedgerEntry,
	deleteTwinLedgerEntry,
	updateTwinLedgerEntry,
	updateTwinLedgerEntryValue,
} from "./operations/ledgers";
import { createUserRole, deleteUserRole, getUserRole, getUserRoles, updateUserRole } from "./operations/roles";
import { createTwin, getTwin, scanTwins, terminateTwin, updateTwin } from "./operations/twins";
import { createUser, deleteUser, getUser, getUsers, updateUser } from "./operations/users";
import { confirmSubscription, refreshSubscription, unsubscribe, webhookSubscribe } from "./operations/webhooks";
import {
	deleteWebhookSubscription,
	getWebhookDeliveries,
	getWebhookSubscription,
	getWebhookSubscriptions,
	resendWebhookConfirmation,
} from "./operations/webhook-subscriptions";
import { whoAmI } from "./operations/whoami";
import { getAccount, updateAccount } from "./operations/account";
import { trace } from "./operations/trace";
import { createUserToken, refreshUserToken } from "./operations/tokens";
import { createUploadUrl, invalidateUploadUrl, uploadToCache } from "./operations/uploads";
import { attachTwinDoc, deleteTwinDoc, deleteTwinDocs, downloadDoc, getTwinDoc, getTwinDocs, updateTwinDoc } from "./operations/docs";
import {
	createIndexesTable,
	deleteIndexesTable,
	getIndexesTable,
	getIndexesTables,
	queryIndexesTable,
	truncateIndexesTable,
	updateIndexesTable,
} from "./operations/indexes";
import { getNotificationsAccess, updateNotificationsAccountAccess } from "./operations/notifications-access";
import { createStreamToken, streamNotifications } from "./operations/streams";
import { getSticker, getStickers, listStickers, putSticker, removeSticker } from "./operations/stickers";
import { getLog } from "./operations/log";
import { getAccountUsage, getUserUsage } from "./operations/usage";

// The route table: every operation once, under the path of the interface.
export const routes: Route[] = [
	{ method: "GET", path: "/whoami", operation: whoAmI },
	{ method: "GET", path: "/account", operation: getAccount },
	{ method: "PATCH", path: "/account", operation: updateAccount },
	{ method: "POST", path: "/trace", operation: trace },
	{ method: "POST", path: "/account/services/indexes", operation: createIndexesTable },
	{ method: "GET", path: "/account/services/indexes", operation: getIndexesTables },
	{ method: "GET", path: "/account/services/indexes/:index", operation: getIndexesTable },
	{ method: "PATCH", path: "/account/services/indexes/:index", operation: updateIndexesTable },
	{ method: "DELETE", path: "/account/services/indexes/:index", operation: deleteIndexesTable },
	{ method: "GET", path: "/account/services/indexes/:index/data", operation: queryIndexesTable },
	{ method: "DELETE", path: "/account/services/indexes/:index/data", operation: truncateIndexesTable },
	{ method: "POST", path: "/token", operation: createUserToken },
	{ method: "POST", path: "/token/refresh", operation: refreshUserToken },
	{ method: "POST", path: "/users", operation: createUser },
	{ method: "GET", path: "/users", operation: getUsers },
	{ method: "GET", path: "/users/:user", operation: getUser },
	{ method: "PATCH", path: "/users/:user", operation: updateUser },
	{ method: "DELETE", path: "/users/:user", operation: deleteUser },
	{ method: "POST", path: "/users/:user/secrets", operation: createUserSecretPin },
	{ method: "GET", path: "/users/:user/secrets", operation: getUserSecret },
	{ method: "PATCH", path: "/users/:user/secrets", operation: updateUserSecret },
	{ method: "DELETE", path: "/users/:user/secrets", operation: deleteUserSecret },
	{ method: "POST", path: "/secrets/:account/:pin", operation: createUserSecret },
	{ method: "POST", path: "/roles", operation: createUserRole },
	{ method: "GET", path: "/roles", operation: getUserRoles },
	{ method: "GET", path: "/roles/:role", operation: getUserRole },
	{ method: "PATCH", path: "/roles/:role", operation: updateUserRole },
	{ method: "DELETE", path: "/roles/:role", operation: deleteUserRole },
	{ method: "POST", path: "/twins", operation: createTwin },
	{ method: "GET", path: "/twins", operation: scanTwins },
	{ method: "GET", path: "/twins/:twin", operation: getTwin },
	{ method: "PATCH", path: "/twins/:twin", operation: updateTwin },
	{ method: "DELETE", path: "/twins/:twin", operation: terminateTwin },
	{ method: "POST", path: "/twins/:twin/identities", operation: createTwinIdentity },
	{ method: "GET", path: "/twins/:twin/identities", operation: getTwinIdentities },
	{ method: "GET", path: "/twins/:twin/identities/:identity", operation: getTwinIdentity },
	{ method: "PATCH", path: "/twins/:twin/identities/:identity", operation: updateTwinIdentity },
	{ method: "DELETE", path: "/twins/:twin/identities/:identity", operation: deleteTwinIdentity },
	{ method: "GET", path: "/resolve/:identity", operation: resolveTwinIdentity },
	{ method: "POST", path: "/twins/:twin/ledgers/:ledger", operation: addTwinLedgerEntry },
	{ method: "GET", path: "/twins/:twin/ledgers/:ledger", operation: getTwinLedgerEntry },
	{ method: "PATCH", path: "/twins/:twin/ledgers/:ledger", operation: updateTwinLedgerEntry },
	{ method: "DELETE", path: "/twins/:twin/ledgers/:ledger", operation: deleteTwinLedgerEntry },
	{ method: "GET", path: "/twins/:twin/ledgers/:ledger/value", operation: getTwinLedgerEntryValue },
	{ method: "PATCH", path: "/twins/:twin/ledgers/:ledger/value", operation: updateTwinLedgerEntryValue },
	{ method: "GET", path: "/twins/:twin/ledgers/:ledger/history", operation: getTwinLedgerEntryHistory },
	{ method: "POST", path: "/twins/:twin/stickers", operation: putSticker },
	{ method: "GET", path: "/twins/:twin/stickers", operation: getStickers },
	{ method: "GET", path: "/twins/:twin/stickers/:color", operation: getSticker },
	{ method: "DELETE", path: "/twins/:twin/stickers/:color", operation: removeSticker },
	{ method: "GET", path: "/stickers", operation: listStickers },
	{ method: "POST", path: "/cache", operation: createUploadUrl },
	{ method: "DELETE", path: "/cache/:handler", operation: invalidateUploadUrl },
	{ method: "PUT", path: "/cache/:account/:handler", operation: uploadToCache },
	{ method: "POST", path: "/twins/:twin/docs", operation: attachTwinDoc },
	{ method: "GET", path: "/twins/:twin/docs", operation: getTwinDocs },
	{ method: "DELETE", path: "/twins/:twin/docs", operation: deleteTwinDocs },
	// The name takes the rest of the path: its folders' '/' stay as they are.
	{ method: "GET", path: "/twins/:twin/docs/:name+", operation: getTwinDoc },
	{ method: "PATCH", path: "/twins/:twin/docs/:name+", operation: updateTwinDoc },
	{ method: "DELETE", path: "/twins/:twin/docs/:name+", operation: deleteTwinDoc },
	{ method: "GET", path: "/download/:account/:handler", operation: downloadDoc },
	{ method: "POST", path: "/notifications/webhooks", operation: webhookSubscribe },
	{ method: "GET", path: "/notifications/webhooks", operation: getWebhookSubscriptions },
	// Before /notifications/webhooks/:account, although that one segment could not match these.
	{ method: "GET", path: "/notifications/webhooks/subscriptions/:subscription", operation: getWebhookSubscription },
	{ method: "DELETE", path: "/notifications/webhooks/subscriptions/:subscription", operation: deleteWebhookSubscription },
	{ method: "GET", path: "/notifications/webhooks/subscriptions/:subscription/deliveries", operation: getWebhookDeliveries },
	{ method: "POST", path: "/notifications/webhooks/subscriptions/:subscription/confirmation", operation: resendWebhookConfirmation },
	{ method: "GET", path: "/notifications/webhooks/access", operation: getNotificationsAccess },
	{ method: "PATCH", path: "/notifications/webhooks/access/accounts/:account", operation: updateNotificationsAccountAccess },
	{ method: "GET", path: "/notifications/stream", operation: streamNotifications },
	{ method: "POST", path: "/notifications/stream/tokens", operation: createStreamToken },
	{ method: "GET", path: "/usage", operation: getAccountUsage },
	{ method: "GET", path: "/usage/:user", operation: getUserUsage },
	{ method: "GET", path: "/notifications/webhooks/:account", operation: confirmSubscription },
	{ method: "PATCH", path: "/notifications/webhooks/:account", operation: refreshSubscription },
	{ method: "DELETE", path: "/notifications/webhooks/:account", operation: unsubscribe },
	{ method: "GET", path: "/log", operation: getLog },
	{ method: "POST", path: "/admin/accounts", operation: createAccount },
] as Route[];

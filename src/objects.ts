import { lazyObject } from "./base/lazy-object";

// The Durable Object classes the Worker exports (wrangler.toml binds them by these names). Each
// loads its implementation with its first call (base/lazy-object.ts): an isolate evaluates only
// what it runs, so one that serves requests never evaluates the objects' writes, and an
// account's object never evaluates the router. The lists name every public method; the type
// checker refuses one that leaves a method out.

export const AccountDO = lazyObject(
	() => import("./account/object").then((m) => m.AccountObject),
	[
		"createRole",
		"updateRole",
		"deleteRole",
		"createUser",
		"updateUser",
		"deleteUser",
		"issuePin",
		"changeSecretValidity",
		"removeSecret",
		"createProvider",
		"updateProvider",
		"deleteProvider",
		"createLink",
		"deleteLink",
		"provision",
		"createIdentities",
		"updateIdentity",
		"deleteIdentity",
		"createUpload",
		"invalidateUpload",
		"claimUpload",
		"renewUpload",
		"finishUpload",
		"reopenUpload",
		"attachDocs",
		"updateDoc",
		"deleteDoc",
		"deleteDocs",
		"putStickers",
		"removeSticker",
		"subscribe",
		"reissue",
		"createIndexTables",
		"updateIndexTable",
		"truncateIndexTable",
		"deleteIndexTable",
		"scan",
		"alarm",
		"addUsage",
		"readUsage",
		"journal",
		"writeLedger",
	],
);
export type AccountDO = InstanceType<typeof AccountDO>;

export const DeliveryDO = lazyObject(
	() => import("./notifications/delivery-object").then((m) => m.DeliveryObject),
	["run", "alarm"],
);
export type DeliveryDO = InstanceType<typeof DeliveryDO>;

export const StreamDO = lazyObject(
	() => import("./notifications/streams/object").then((m) => m.StreamObject),
	["fetch", "append", "webSocketMessage", "webSocketClose", "alarm", "revoke", "apply", "ungranted", "notePublisher"],
);
export type StreamDO = InstanceType<typeof StreamDO>;

export const MoveDO = lazyObject(
	() => import("./shards/move-object").then((m) => m.MoveObject),
	["start", "status", "abort", "alarm"],
);
export type MoveDO = InstanceType<typeof MoveDO>;

import { lazyObject } from "./base/lazy-object";
import { loadOnce } from "./base/load-once";

// The Durable Object classes the Worker exports (wrangler.toml binds them by these names). Each
// loads its implementation with its first call (base/lazy-object.ts): an isolate evaluates only
// what it runs, so one that serves requests never evaluates the objects' writes, and an
// account's object never evaluates the router. The lists name every public method; the type
// checker refuses one that leaves a method out. Each class's implementation is kept once loaded
// (base/load-once.ts), so only an isolate's first objects of a kind import it, and the tests load
// them all before their first call (test/load-operations.ts): the Workers test pool cannot run an
// import() inside an object's call.

export const loadAccountObject = loadOnce(() => import("./account/object").then((m) => m.AccountObject));
export const loadDeliveryObject = loadOnce(() =>
	import("./notifications/delivery-object").then((m) => m.DeliveryObject),
);
export const loadStreamObject = loadOnce(() => import("./notifications/streams/object").then((m) => m.StreamObject));
export const loadMoveObject = loadOnce(() => import("./shards/move-object").then((m) => m.MoveObject));
export const loadJobObject = loadOnce(() => import("./jobs/object").then((m) => m.JobObject));
export const loadChunkObject = loadOnce(() => import("./timeseries/chunk-object").then((m) => m.ChunkObject));

export const AccountDO = lazyObject(loadAccountObject, [
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
	"createTimeseriesTables",
	"updateTimeseriesTable",
	"truncateTimeseriesTable",
	"deleteTimeseriesTable",
	"deliverTimeseries",
	"createJob",
	"scan",
	"alarm",
	"addUsage",
	"readUsage",
	"journal",
	"writeLedger",
]);
export type AccountDO = InstanceType<typeof AccountDO>;

export const DeliveryDO = lazyObject(loadDeliveryObject, ["run", "alarm"]);
export type DeliveryDO = InstanceType<typeof DeliveryDO>;

export const StreamDO = lazyObject(loadStreamObject, [
	"fetch",
	"append",
	"webSocketMessage",
	"webSocketClose",
	"alarm",
	"revoke",
	"apply",
	"ungranted",
	"notePublisher",
]);
export type StreamDO = InstanceType<typeof StreamDO>;

export const MoveDO = lazyObject(loadMoveObject, ["start", "status", "abort", "alarm"]);
export type MoveDO = InstanceType<typeof MoveDO>;

export const TimeseriesDO = lazyObject(loadChunkObject, [
	"insert",
	"read",
	"tiers",
	"fillStep",
	"status",
	"alarm",
	"wipe",
]);
export type TimeseriesDO = InstanceType<typeof TimeseriesDO>;

export const BatchDO = lazyObject(loadJobObject, ["start", "cancel", "remove", "alarm"]);
export type BatchDO = InstanceType<typeof BatchDO>;

import type { Caller } from "../base/caller";
import type { Database } from "../db/client";
import type { D1Meter } from "../db/meter";
import type { StreamChange } from "../notifications/streams/client";
import type { Outcome } from "./outcome";
import type { Timers } from "./timers";
import type { UsageStore } from "./usage-store";

// Writes take only who the caller is: what it may do is read again inside the serialized step.
// The request's dictionary and credential travel with it.
export type CallerId = Pick<Caller, "account" | "user" | "dict" | "credential">;

// What the account's object lends the features that run inside it: its serialized step (one
// write at a time), a user's write in that step, its schedule, its storage, the account's
// usage, its journal, the streams a committed change ends, and the drain that hands committed
// notification messages on. A feature's methods (facets/) and background steps take it.
export type Host = {
	env: Env;
	// The database holding the account's rows (docs/scaling.md).
	home(): D1Database;
	storage: DurableObjectStorage;
	timers: Timers;
	usage: UsageStore;
	serialized<T>(work: (db: Database, meter: D1Meter) => Promise<T>): Promise<Outcome<T>>;
	// A user's write: the caller read again and its statement checked in the step, then a line
	// in the journal.
	write<T extends { uuid: string } | { user: string }>(
		caller: CallerId,
		action: string,
		work: (db: Database, current: Caller, meter: D1Meter) => Promise<T>,
	): Promise<Outcome<T>>;
	// Once a write has committed: the streams its change ends or changes hear of it.
	tellStreams<T>(
		write: Promise<Outcome<T>>,
		change: (value: T) => StreamChange | undefined | Promise<StreamChange | undefined>,
	): Promise<Outcome<T>>;
	// A line in the object's journal.
	record(actor: string, action: string, target: string): void;
	// Answers whether messages are left for a later drain.
	drain(account: string): Promise<boolean>;
	// Before a batch with notification messages commits: a drain no later than a short grace,
	// so a crash right after the commit leaves nothing behind for good.
	armDrain(account: string): Promise<void>;
};

// The timers of the account's object (timers.ts), one per kind of background work.
export const TIMER = {
	outbox: "outbox",
	cursors: "cursors",
	docs: "docs",
	indexes: "indexes",
	stickers: "stickers",
	stickerCopies: "sticker-copies",
	directory: "directory",
	timeseries: "timeseries",
} as const;

// What a step answers when its work failed for a moment (D1 did): try again in a minute.
export const RETRY_SECONDS = 60;

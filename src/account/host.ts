import type { Database } from "../db/client";
import type { D1Meter } from "../db/meter";
import type { Outcome } from "./outcome";
import type { Timers } from "./timers";
import type { UsageStore } from "./usage-store";

// What the account's object lends the features that run inside it: its serialized step (one
// write at a time), its schedule, its storage, the account's usage, and the drain that hands
// committed notification messages on. A feature's background step takes it.
export type Host = {
	env: Env;
	storage: DurableObjectStorage;
	timers: Timers;
	usage: UsageStore;
	serialized<T>(work: (db: Database, meter: D1Meter) => Promise<T>): Promise<Outcome<T>>;
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
} as const;

// What a step answers when its work failed for a moment (D1 did): try again in a minute.
export const RETRY_SECONDS = 60;

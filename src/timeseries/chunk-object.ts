import { now } from "../base/time";
import { atOrBefore, ChunkStore, pointBytes, RAW_TABLE, type TierState } from "./chunk-store";
import { database } from "../db/client";
import { homeDatabase } from "../db/shards";
import { timeseriesTableById } from "../db/timeseries";
import { onExpired } from "./expiry";
import { chunkSpec } from "./spec";
import type { ChunkSpec, Point, RawPosition, RollupPosition, RollupRow, RollupStep, Tier } from "./types";

// One object per (table, generation, chunk) of a Timeseries table: the chunk's raw points and
// their rollup tiers, in its own SQLite storage. Every call that writes carries the table's
// current spec; the object follows it: a tier removed is dropped at once, a tier added is built
// from the raw points by fillStep while inserts go on. Its alarm drops each tier whole when its
// retention runs out, and empties the object after the last.

export type InsertResult = {
	// Points stored by this call, and the bytes they added.
	stored: number;
	bytes: number;
	// Points whose key was stored before: nothing changed.
	duplicates: number;
	// New points refused because the chunk holds spec.maxBytes.
	full: { seq: number; entry: string }[];
	// Points refused because the chunk's raw retention has run out.
	expired: number;
};

export type ReadInput = {
	tier: Tier;
	ge: number;
	le: number;
	after: RawPosition | RollupPosition | null;
	desc: boolean;
	limit: number;
};

export type ChunkStatus = { tiers: Record<string, TierState>; rows: number; bytes: number };

type Counts = { rows: number; bytes: number };

const SPEC = "spec";
// How often an object holding points reads its table's definition again.
const REREAD_SECONDS = 86_400;
const COUNTS = "counts";

// When a tier's table goes: the chunk's end plus the tier's retention (seconds), null for INF.
function expiresAt(spec: ChunkSpec, tier: string): number | null {
	const retention = tier === RAW_TABLE ? spec.retention : spec.tiers.find((t) => t.step === tier)?.retention;
	return retention === null || retention === undefined ? null : spec.end + retention;
}
const isExpired = (spec: ChunkSpec, tier: string, at: number) => {
	const end = expiresAt(spec, tier);
	return end !== null && end <= at;
};

export class ChunkObject {
	private readonly store: ChunkStore;

	constructor(
		protected readonly ctx: DurableObjectState,
		protected env: Env,
	) {
		this.store = new ChunkStore(ctx.storage.sql);
	}

	// Stores the points not stored before and folds each into every ready tier, and into a
	// building tier when its walk has passed it: one transaction, so a point is in all of them
	// or in none, wherever its time falls.
	async insert(spec: ChunkSpec, points: Point[]): Promise<InsertResult> {
		const at = now();
		const result: InsertResult = { stored: 0, bytes: 0, duplicates: 0, full: [], expired: 0 };
		this.ctx.storage.transactionSync(() => {
			const tiers = this.adopt(spec, at);
			if (!tiers?.has(RAW_TABLE) || isExpired(spec, RAW_TABLE, at)) {
				result.expired = points.length;
				return;
			}
			const counts = this.store.getMeta<Counts>(COUNTS) ?? { rows: 0, bytes: 0 };
			const folded = [...tiers].filter(([tier]) => tier !== RAW_TABLE && !isExpired(spec, tier, at));
			for (const point of points) {
				if (this.store.has(point)) {
					result.duplicates++;
					continue;
				}
				if (counts.bytes >= spec.maxBytes) {
					result.full.push({ seq: point.seq, entry: point.entry });
					continue;
				}
				this.store.insertRaw(point);
				const bytes = pointBytes(point);
				counts.rows++;
				counts.bytes += bytes;
				result.stored++;
				result.bytes += bytes;
				for (const [tier, { state, progress }] of folded)
					if (state === "ready" || atOrBefore(point, progress))
						this.store.fold(tier as RollupStep, point, spec.measurements[point.measurement]);
			}
			this.store.setMeta(COUNTS, counts);
		});
		await this.schedule(spec);
		return result;
	}

	// One page of a tier's rows strictly after `after`, in key order (or its reverse). A tier
	// that is not there or still building answers none.
	async read(input: ReadInput): Promise<{ raw?: Point[]; rollup?: RollupRow[] }> {
		const { tier, ge, le, after, desc } = input;
		const limit = Math.max(0, Math.floor(input.limit));
		const ready = this.store.tiers().get(tier)?.state === "ready";
		if (tier === RAW_TABLE)
			return { raw: ready ? this.store.readRaw(ge, le, after as RawPosition | null, desc, limit) : [] };
		return {
			rollup: ready ? this.store.readRollup(tier, ge, le, after as RollupPosition | null, desc, limit) : [],
		};
	}

	// Follows the spec's tier list without inserting: tiers removed drop, tiers added start building.
	async tiers(spec: ChunkSpec): Promise<ChunkStatus> {
		const at = now();
		this.ctx.storage.transactionSync(() => this.adopt(spec, at));
		await this.schedule(spec);
		return this.status();
	}

	// Folds up to `limit` more raw points into a building tier, in key order from where its walk
	// stopped; the tier is ready once a step finds fewer. Inserts meanwhile fold only the points
	// the walk has passed, so each point is folded once.
	async fillStep(spec: ChunkSpec, step: RollupStep, limit: number): Promise<{ done: boolean }> {
		const at = now();
		const done = this.ctx.storage.transactionSync(() => {
			const tiers = this.adopt(spec, at);
			const tier = tiers?.get(step);
			if (tier?.state !== "building") return true;
			const most = Math.max(1, Math.floor(limit));
			const points = this.store.walk(tier.progress, most);
			for (const point of points) this.store.fold(step, point, spec.measurements[point.measurement]);
			const last = points.at(-1);
			const finished = points.length < most;
			this.store.setTier(step, finished ? "ready" : "building", finished || !last ? null : keyOf(last));
			return finished;
		});
		await this.schedule(spec);
		return { done };
	}

	async status(): Promise<ChunkStatus> {
		const tiers = Object.fromEntries([...this.store.tiers()].map(([tier, { state }]) => [tier, state]));
		const counts = this.store.getMeta<Counts>(COUNTS) ?? { rows: 0, bytes: 0 };
		return { tiers, ...counts };
	}

	// Retention: drops every tier whose time has come, whole; empties the object after the last.
	// It first reads the table's definition again (the alarm comes at least daily), so that a
	// retention or tiers changed since the last write apply without one; a table deleted or
	// truncated since leaves the object empty.
	async alarm() {
		const kept = this.store.getMeta<ChunkSpec>(SPEC);
		if (!kept) return;
		const at = now();
		const spec = await this.reread(kept);
		if (!spec) {
			await this.wipe();
			return;
		}
		this.ctx.storage.transactionSync(() => this.adopt(spec, at));
		for (const tier of this.store.tiers().keys()) {
			if (!isExpired(spec, tier, at)) continue;
			if (tier === RAW_TABLE) {
				// Told before the rows go: if it fails, the alarm runs again with them still there.
				const counts = this.store.getMeta<Counts>(COUNTS) ?? { rows: 0, bytes: 0 };
				await onExpired(this.env, spec, counts);
				// A wipe may have come in while it was told.
				if (!this.store.exists) return;
				this.ctx.storage.transactionSync(() => {
					this.store.drop(RAW_TABLE);
					this.store.setMeta(COUNTS, { rows: 0, bytes: 0 });
					// Nothing is left to build them from.
					for (const [other, { state }] of this.store.tiers())
						if (state === "building") this.store.setTier(other, "ready", null);
				});
			} else this.ctx.storage.transactionSync(() => this.store.drop(tier));
		}
		if (this.store.tiers().size === 0) await this.wipe();
		else await this.schedule(spec);
	}

	// Empties the object (its table truncated or deleted).
	async wipe() {
		await this.ctx.storage.deleteAll();
		await this.ctx.storage.deleteAlarm();
		this.store.forget();
	}

	// Makes the tables follow the spec's tiers and keeps the spec for the alarm; answers the tiers
	// as they now stand. A tier added to a chunk that holds points starts building; one added
	// before any point is ready at once. Tiers already past their retention are not made, and
	// an object that is empty past its raw retention (its alarm emptied it) is not written again.
	private adopt(spec: ChunkSpec, at: number) {
		if (!this.store.exists && isExpired(spec, RAW_TABLE, at)) return undefined;
		this.store.ensure();
		this.store.setMeta(SPEC, spec);
		const tiers = this.store.tiers();
		const wanted = new Set<string>([RAW_TABLE, ...spec.tiers.map((t) => t.step)]);
		for (const tier of tiers.keys())
			if (!wanted.has(tier)) {
				this.store.drop(tier);
				tiers.delete(tier);
			}
		// Raw is made once: never again after retention dropped it (its counts stay, at zero).
		if (!tiers.has(RAW_TABLE) && !isExpired(spec, RAW_TABLE, at) && this.store.getMeta(COUNTS) === undefined) {
			this.store.createRaw();
			this.store.setTier(RAW_TABLE, "ready", null);
			tiers.set(RAW_TABLE, { state: "ready", progress: null });
		}
		const hasPoints = tiers.has(RAW_TABLE) && this.store.hasRaw();
		for (const { step } of spec.tiers) {
			if (tiers.has(step) || isExpired(spec, step, at)) continue;
			const state: TierState = hasPoints ? "building" : "ready";
			this.store.createRollup(step);
			this.store.setTier(step, state, null);
			tiers.set(step, { state, progress: null });
		}
		return tiers;
	}

	// The table's definition as D1 holds it now, as this chunk's spec; null when the table or
	// this generation is gone. A failed read throws: the alarm runs again.
	private async reread(spec: ChunkSpec): Promise<ChunkSpec | null> {
		const row = await timeseriesTableById(database(homeDatabase(this.env, spec.account)), spec.table);
		if (!row || row.generation !== spec.generation) return null;
		return chunkSpec(row, spec.start, spec.maxBytes);
	}

	// The alarm at the earliest time a table that is still there runs out, and within a day
	// while the object holds any: the definition is read again then.
	private async schedule(spec: ChunkSpec) {
		const times = [...this.store.tiers().keys()]
			.map((tier) => expiresAt(spec, tier))
			.filter((t): t is number => t !== null);
		const expiry = times.length ? Math.ceil(Math.min(...times) * 1000) : null;
		const current = await this.ctx.storage.getAlarm();
		if (this.store.tiers().size === 0) {
			if (current !== null) await this.ctx.storage.deleteAlarm();
			return;
		}
		// A daily alarm already set stays: each write would otherwise move it.
		const daily = Date.now() + REREAD_SECONDS * 1000;
		const reread = current !== null && current > Date.now() && current <= daily ? current : daily;
		const next = expiry === null ? reread : Math.min(expiry, reread);
		if (current !== next) await this.ctx.storage.setAlarm(next);
	}
}

const keyOf = (point: Point): RawPosition => ({ ts: point.ts, seq: point.seq, entry: point.entry });

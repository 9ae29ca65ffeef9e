import { database } from "../db/client";
import * as db_ from "../db/timeseries";
import { now } from "../base/time";
import { chunkObject } from "../timeseries/chunk-client";
import { chunkSpec } from "../timeseries/spec";
import type { RollupStep } from "../timeseries/types";
import { type Host, RETRY_SECONDS } from "./host";
import type { TimeseriesFeed } from "./timeseries-feed";
import type { TimeseriesCatalog } from "./timeseries-tables";

// The timeseries timer's step (docs/timeseries.md): a round of the outbox drain, a step of each
// rollup tier being filled, and a round of emptying the chunk objects of deleted tables and of
// generations before a truncate. Each round is bounded; the timer is due again at once while
// work is left, and in a minute after a failure.

// Chunk objects a round empties; chunk objects a round fills, and raw points each fill step
// reads per tier: a round folds at most FILL_CHUNKS x 3 tiers x FILL_POINTS points, while the
// account's writes wait (it runs in their serialized step).
const CHUNKS_PER_ROUND = 16;
const FILL_CHUNKS = 4;
const FILL_POINTS = 1000;
// Where each table's fill stands: the chunk start it has reached, per generation.
const FILLS = "timeseries-fills";
type Fills = Record<string, { generation: number; after: number }>;

export async function timeseriesStep(
	host: Host,
	feed: TimeseriesFeed,
	catalog: TimeseriesCatalog,
	account: string,
): Promise<number | undefined> {
	const db = database(host.home());
	const rounds = await Promise.allSettled([
		feed.drain(db, account),
		host
			.serialized(() => fillRound(host, catalog, account))
			.then((outcome) => {
				// The serialized step has logged what failed.
				if (!outcome.ok) throw new Error("the fill round failed");
				return outcome.value;
			}),
		sweepRound(host, account),
	]);
	if (rounds.some((round) => round.status === "rejected")) return now() + RETRY_SECONDS;
	return rounds.some((round) => round.status === "fulfilled" && round.value) ? now() + 1 : undefined;
}

// One round of every table's fill: up to FILL_CHUNKS chunk objects, each filling its
// building tiers a step further. A table whose chunks are all done is ready.
async function fillRound(host: Host, catalog: TimeseriesCatalog, account: string): Promise<boolean> {
	const db = database(host.home());
	const fills = (await host.storage.get<Fills>(FILLS)) ?? {};
	let calls = 0;
	let left = false;
	for (const table of await catalog.all(account)) {
		if (table.building.length === 0) {
			delete fills[table.uuid];
			continue;
		}
		const kept = fills[table.uuid];
		const fill = kept?.generation === table.generation ? kept : { generation: table.generation, after: -1 };
		const chunks = await db_.chunksBetween(
			db,
			{ table: table.uuid, generation: table.generation },
			fill.after + 1,
			Number.MAX_SAFE_INTEGER,
			false,
			FILL_CHUNKS,
		);
		let finished = chunks.length < FILL_CHUNKS;
		for (const { start } of chunks) {
			if (calls >= FILL_CHUNKS) {
				finished = false;
				break;
			}
			calls++;
			const spec = chunkSpec(table, start, Number(host.env.MAX_TIMESERIES_CHUNK_BYTES));
			const stub = chunkObject(host.env, table.uuid, table.generation, start);
			let done = true;
			for (const step of table.building)
				done = (await stub.fillStep(spec, step as RollupStep, FILL_POINTS)).done && done;
			if (!done) {
				finished = false;
				break;
			}
			fill.after = start;
		}
		if (finished) {
			const status = table.status === "full" ? "full" : "ready";
			await db_.setTimeseriesTable(db, table.uuid, { building: [], status });
			catalog.put({ ...table, building: [], status });
			delete fills[table.uuid];
		} else {
			fills[table.uuid] = fill;
			left = true;
		}
	}
	await host.storage.put(FILLS, fills);
	return left;
}

// The chunks of deleted tables and of older generations: each object emptied, then its row.
async function sweepRound(host: Host, account: string): Promise<boolean> {
	const db = database(host.home());
	const stale = await db_.staleChunks(db, account, CHUNKS_PER_ROUND);
	if (stale.length === 0) return false;
	await Promise.all(stale.map((c) => chunkObject(host.env, c.table, c.generation, c.start).wipe()));
	await db_.forgetChunks(db, stale);
	return stale.length === CHUNKS_PER_ROUND;
}

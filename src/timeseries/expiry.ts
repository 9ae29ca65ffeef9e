import { database } from "../db/client";
import { homeDatabase } from "../db/shards";
import { countPoints } from "../db/timeseries";
import type { ChunkSpec } from "./types";

// Called by a chunk object when retention drops its raw points, before they go: `dropped` is
// what they counted. The table's row and byte counts in D1 (timeseries_tables) go down here.
// A failure makes the object's alarm run again, so the update should tolerate a repeat.
// The drop that follows is in the object's own storage: once this has counted them, they go.
export async function onExpired(env: Env, spec: ChunkSpec, dropped: { rows: number; bytes: number }): Promise<void> {
	if (dropped.rows === 0 && dropped.bytes === 0) return;
	const db = database(homeDatabase(env, spec.account));
	await countPoints(db, spec.table, spec.generation, -dropped.rows, -dropped.bytes);
}

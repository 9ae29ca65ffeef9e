import type { ChunkSpec } from "./types";

// Called by a chunk object when retention drops its raw points, before they go: `dropped` is
// what they counted. The table's row and byte counts in D1 (timeseries_tables) go down here.
// A failure makes the object's alarm run again, so the update should tolerate a repeat.
export async function onExpired(_env: Env, _spec: ChunkSpec, _dropped: { rows: number; bytes: number }): Promise<void> {
	// The D1 update of timeseries_tables belongs here.
}

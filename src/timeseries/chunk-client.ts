import type { ChunkObject } from "./chunk-object";

// A chunk object as its callers reach it, typed against the object's own signatures rather
// than the RPC stub's, whose types recurse through JSON values deeper than TypeScript follows.
export type ChunkClient = Pick<ChunkObject, "insert" | "read" | "tiers" | "fillStep" | "status" | "wipe">;

// One object per table, generation and chunk (its start, in seconds).
export const chunkName = (table: string, generation: number, start: number) => `${table}/${generation}/${start}`;

export function chunkClient(env: Env, name: string): ChunkClient {
	return env.TIMESERIES.getByName(name) as unknown as ChunkClient;
}

// The chunk object of a table's generation that starts at `start`.
export function chunkObject(env: Env, table: string, generation: number, start: number): ChunkClient {
	return chunkClient(env, chunkName(table, generation, start));
}

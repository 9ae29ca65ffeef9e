import { ApiError } from "../base/errors";
import { bucketOfId, FIRST_SHARD, parseShards, type ShardMap, shardBindings } from "../base/shards";
import { D1Meter } from "./meter";
import { isMoving } from "./moves";

// Which D1 database holds what (docs/scaling.md): the var SHARDS, read once per isolate, maps
// an account's bucket to its binding. A version-8 id names its bucket; any other id is of an
// account from before sharding, whose rows all live on DB_0.

let read: { text: string | undefined; map: ShardMap; declared: string[] } | undefined;

// Every D1 binding the Worker declares as a shard, in binding order.
export function declaredShards(env: Env): string[] {
	return read?.declared ?? shardBindings(Object.keys(env));
}

export function shardMap(env: Env): ShardMap {
	if (read === undefined || read.text !== env.SHARDS) {
		const declared = shardBindings(Object.keys(env));
		read = { text: env.SHARDS, map: parseShards(env.SHARDS, declared), declared };
	}
	return read.map;
}

// The map, or 500241: a Worker running with a bad map reads and writes nothing.
export function checkedShards(env: Env): readonly string[] {
	const map = shardMap(env);
	if (!map.ok) throw new ApiError("shards_invalid", { description: `SHARDS is invalid: ${map.fault}` });
	return map.bindings;
}

export const bindingOfBucket = (env: Env, bucket: number) => checkedShards(env)[bucket]!;

// The binding that holds the rows of the account an id belongs to.
export function homeOf(env: Env, id: string): string {
	const bucket = bucketOfId(id);
	return bucket === undefined ? FIRST_SHARD : bindingOfBucket(env, bucket);
}

export function shardDatabase(env: Env, binding: string): D1Database {
	const d1 = (env as unknown as Record<string, D1Database | undefined>)[binding];
	if (!d1) throw new Error(`No D1 binding ${binding}`);
	return d1;
}

// The database of the account an id belongs to.
export const homeDatabase = (env: Env, id: string) => shardDatabase(env, homeOf(env, id));

// The databases one request reads and writes, each in one session begun at its primary (a
// credential checked there sees every revocation; the request's later reads come from a replica
// at least as new), each metered by the request's meter under its binding.
export class Sessions {
	private readonly opened = new Map<string, D1Database>();
	// The reads aside (below), by part and binding, until revealed.
	private readonly asides = new Map<string, { meter: D1Meter; d1: D1Database }>();
	// The binding of the caller's account, once the credential named it: x-d1-bookmark lists it first.
	home: string | undefined;

	constructor(
		readonly env: Env,
		private readonly meter: D1Meter,
	) {}

	of(binding: string): D1Database {
		let d1 = this.opened.get(binding);
		if (!d1) {
			d1 = this.meter.wrap(shardDatabase(this.env, binding).withSession("first-primary"), binding);
			this.opened.set(binding, d1);
		}
		return d1;
	}

	// The session of the database holding the rows of the account `id` belongs to.
	for(id: string): D1Database {
		return this.of(homeOf(this.env, id));
	}

	// Every declared shard, for a fan-out that must ask each database that may hold candidates.
	all(): string[] {
		return everyShard(this.env);
	}

	// A fan-out's read of a database chosen by what the caller may not see (docs/scaling.md, "What
	// holds across databases"): a session of its own, begun at the primary and metered apart
	// under `part`, which counts for the request (its statements, time and bookmark) only once
	// `reveal` names it, for a result the caller sees. So the databases a fan-out asks for
	// candidates it then hides cost nothing and are named nowhere, as if the candidates were absent.
	aside(part: string, binding: string): D1Database {
		const key = `${part}/${binding}`;
		let read = this.asides.get(key);
		if (!read) {
			const meter = new D1Meter();
			read = { meter, d1: meter.wrap(shardDatabase(this.env, binding).withSession("first-primary"), binding) };
			this.asides.set(key, read);
		}
		return read.d1;
	}

	// The reads aside of `part` in these databases, counted for the request, each once.
	reveal(part: string, bindings: Iterable<string>): void {
		for (const binding of new Set(bindings)) {
			const key = `${part}/${binding}`;
			const read = this.asides.get(key);
			if (!read) continue;
			this.asides.delete(key);
			const { queries, calls, ms } = read.meter;
			this.meter.add({ queries, calls, ms, bookmarks: read.meter.bookmarks() });
		}
	}
}

// The bindings a fan-out asks: every declared shard SHARDS maps a bucket to, and DB_0, which
// holds the rows of the accounts from before sharding.
export function everyShard(env: Env): string[] {
	const mapped = new Set(checkedShards(env));
	mapped.add(FIRST_SHARD);
	return declaredShards(env).filter((binding) => mapped.has(binding));
}

// The bucket of a new account: drawn uniformly from the buckets SHARDS maps to the bindings
// NEW_ACCOUNTS names (empty: every binding), so a full database stops taking accounts.
export function newAccountBucket(env: Env): number {
	const bindings = checkedShards(env);
	const open = (env.NEW_ACCOUNTS ?? "")
		.split(",")
		.map((name) => name.trim())
		.filter(Boolean);
	const buckets = bindings.flatMap((binding, bucket) => (open.length === 0 || open.includes(binding) ? [bucket] : []));
	if (buckets.length === 0)
		throw new ApiError("shards_invalid", { description: "NEW_ACCOUNTS names no binding SHARDS maps a bucket to" });
	return buckets[uniformIndex(buckets.length)]!;
}

function uniformIndex(length: number): number {
	// Rejection sampling keeps every index equally likely.
	const limit = 2 ** 32 - (2 ** 32 % length);
	for (;;) {
		const [value] = crypto.getRandomValues(new Uint32Array(1));
		if (value! < limit) return value! % length;
	}
}

// The bucket a new secret of an account names: its own; for an account from before sharding,
// a bucket the map gives DB_0, where its rows are, so that its secret is found in one query.
export function secretBucket(env: Env, account: string): number {
	const bucket = bucketOfId(account);
	if (bucket !== undefined) return bucket;
	const onFirst = checkedShards(env).indexOf(FIRST_SHARD);
	return onFirst === -1 ? 0 : onFirst;
}

// Ids by the binding of the database holding each (a twin's, its owner's).
export function groupByHome(env: Env, ids: Iterable<string>): Map<string, string[]> {
	const byHome = new Map<string, string[]>();
	for (const id of ids) {
		const binding = homeOf(env, id);
		byHome.set(binding, [...(byHome.get(binding) ?? []), id]);
	}
	return byHome;
}

// Whether the account an id belongs to is in a bucket moving between databases: a write of
// another account into its rows waits, as its own writes do (docs/scaling.md, "Moving a bucket").
export async function refuseIfMoving(db: D1Database, id: string): Promise<void> {
	const bucket = bucketOfId(id);
	if (bucket === undefined) return;
	if (await isMoving(db, bucket))
		throw new ApiError("bucket_moving", { headers: { "retry-after": String(MOVE_RETRY_SECONDS) } });
}

// How long a write refused for a bucket's move is told to wait.
export const MOVE_RETRY_SECONDS = 5;

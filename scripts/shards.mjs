// The D1 shards wrangler.toml declares (DB_0, DB_1, ...) and the SHARDS map over them
// (docs/scaling.md), checked with the Worker's own parser before `npm start` or
// `npm run deploy` lets wrangler run: a Worker on a bad map answers every request 500241.
// Pure: it takes wrangler.toml as read (scripts/deploy/config.mjs) and reads nothing itself.
import { parseShards, shardBindings } from "../src/base/shard-map.ts";

// The D1 bindings DB_k a config declares, in binding order. A binding still named DB is an
// install from before shards, which the Worker no longer reads: refused, with the way out.
export function declaredShards(config) {
	const names = (config.d1_databases ?? []).map((database) => database.binding);
	if (names.includes("DB")) {
		throw new Error(
			'wrangler.toml declares the D1 binding DB, from before shards: rename it to DB_0, keeping its database_name (the same database), then deploy (docs/deploying.md, "Upgrading to shards")',
		);
	}
	return shardBindings(names);
}

// The declared shards, once `shards` (the SHARDS the Worker will run with) covers 0-255 exactly
// once with declared bindings only; else an Error naming the fault.
export function checkShards(config, shards = config.vars?.SHARDS) {
	const declared = declaredShards(config);
	const map = parseShards(shards === undefined ? undefined : String(shards), declared);
	if (!map.ok) throw new Error(`SHARDS is invalid: ${map.fault}`);
	return declared;
}

// The var SHARDS, which maps each of an account's 256 buckets to a D1 binding (docs/scaling.md).
// It imports nothing, so the scripts that start and deploy the Worker check the map with this
// very code before wrangler runs.

export const BUCKETS = 256;
export const FIRST_SHARD = "DB_0";

const BINDING = /^DB_(0|[1-9][0-9]{0,2})$/;

// A bucket → binding table, or the fault that makes the text unusable.
export type ShardMap = { ok: true; bindings: readonly string[] } | { ok: false; fault: string };

// `lo-hi:DB_k` or `b:DB_k`, comma-separated, decimal, covering 0-255 exactly once and naming
// declared bindings only.
export function parseShards(text: string | undefined, declared: readonly string[]): ShardMap {
	if (!text?.trim()) return { ok: false, fault: "SHARDS is empty" };
	const bindings: (string | undefined)[] = new Array(BUCKETS).fill(undefined);
	for (const part of text.split(",")) {
		const match = /^\s*(\d{1,3})(?:-(\d{1,3}))?:(\S+)\s*$/.exec(part);
		if (!match) return { ok: false, fault: `"${part.trim()}" is not lo-hi:DB_k or b:DB_k` };
		const lo = Number(match[1]);
		const hi = match[2] === undefined ? lo : Number(match[2]);
		const binding = match[3]!;
		if (hi < lo || hi >= BUCKETS) return { ok: false, fault: `"${part.trim()}" is not a range within 0-255` };
		if (!BINDING.test(binding) || !declared.includes(binding))
			return { ok: false, fault: `"${part.trim()}" names ${binding}, which is not a declared D1 binding DB_k` };
		for (let bucket = lo; bucket <= hi; bucket++) {
			if (bindings[bucket] !== undefined) return { ok: false, fault: `bucket ${bucket} is mapped twice` };
			bindings[bucket] = binding;
		}
	}
	const missing = bindings.indexOf(undefined);
	if (missing !== -1) return { ok: false, fault: `bucket ${missing} is not mapped` };
	return { ok: true, bindings: bindings as string[] };
}

// The declared shard bindings, in binding order (DB_0, DB_1, ..., DB_10, ...).
export function shardBindings(names: Iterable<string>): string[] {
	return [...names].filter((name) => BINDING.test(name)).sort((a, b) => shardNumber(a) - shardNumber(b));
}

export const shardNumber = (binding: string) => Number(binding.slice(3));

// A map as SHARDS writes it: runs of buckets on one binding as `lo-hi:DB_k`, one bucket alone as
// `b:DB_k`, in bucket order.
export function formatShards(bindings: readonly string[]): string {
	const parts: string[] = [];
	let lo = 0;
	for (let bucket = 1; bucket <= bindings.length; bucket++) {
		if (bucket < bindings.length && bindings[bucket] === bindings[lo]) continue;
		parts.push(`${lo === bucket - 1 ? lo : `${lo}-${bucket - 1}`}:${bindings[lo]}`);
		lo = bucket;
	}
	return parts.join(",");
}

// The map with one bucket on another binding: what a move's flip writes.
export function remapBucket(bindings: readonly string[], bucket: number, binding: string): string {
	return formatShards(bindings.map((current, b) => (b === bucket ? binding : current)));
}

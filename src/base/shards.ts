import { fromBase64Url } from "./crypto";
export { BUCKETS, FIRST_SHARD, parseShards, type ShardMap, shardBindings, shardNumber } from "./shard-map";

// Accounts spread over several D1 databases (docs/scaling.md). An account belongs to one of 256
// buckets; the var SHARDS maps buckets to bindings (`DB_0`, `DB_1`, ...). Every id an account's
// writes make carries its bucket, so a request finds its database without reading a directory.

// An RFC 9562 version-8 uuid whose first octet is the bucket: version 8, variant 10, and 114
// random bits. Ids that name no row (messages, traces, jti) stay version 4.
export function bucketedId(bucket: number): string {
	const bytes = crypto.getRandomValues(new Uint8Array(16));
	bytes[0] = bucket;
	bytes[6] = (bytes[6]! & 0x0f) | 0x80;
	bytes[8] = (bytes[8]! & 0x3f) | 0x80;
	const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
	return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-([0-9a-f])[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

// The bucket a version-8 uuid carries; undefined for any other id (an account from before
// sharding, whose rows all live on DB_0).
export function bucketOfId(id: string): number | undefined {
	const match = UUID.exec(id);
	if (match?.[1] !== "8") return undefined;
	return Number.parseInt(id.slice(0, 2), 16);
}

// An id of the same account: the same bucket, or version 4 for an account from before.
export function sibling(of: string): string {
	const bucket = bucketOfId(of);
	return bucket === undefined ? crypto.randomUUID() : bucketedId(bucket);
}

// The bucket a secret's first byte names. Any 64-character secret has one: a secret from before
// sharding names a random bucket, and is looked for on DB_0 next.
export function bucketOfSecret(secret: string): number | undefined {
	const bytes = fromBase64Url(secret.slice(0, 4));
	return bytes?.[0];
}

// The bucket whose database holds an identity's directory entries (docs/scaling.md, "What
// crosses accounts"): the first byte of the identity's SHA-256, so that entries spread over
// the databases evenly whoever attached them.
export async function bucketOfIdentity(identity: string): Promise<number> {
	const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(identity));
	return new Uint8Array(digest)[0]!;
}

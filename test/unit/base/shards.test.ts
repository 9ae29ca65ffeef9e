import { describe, expect, it } from "vitest";
import { formatShards, parseShards, remapBucket, shardBindings } from "../../../src/base/shard-map";
import { bucketedId, bucketOfId, bucketOfSecret, sibling } from "../../../src/base/shards";
import { base64Url } from "../../../src/base/crypto";

const DECLARED = ["DB_0", "DB_1", "DB_2"];

describe("SHARDS", () => {
	it("maps ranges and single buckets to declared bindings", () => {
		const map = parseShards("0-127:DB_0, 128-254:DB_1,255:DB_2", DECLARED);
		expect(map.ok).toBe(true);
		if (!map.ok) return;
		expect(map.bindings).toHaveLength(256);
		expect(map.bindings[0]).toBe("DB_0");
		expect(map.bindings[127]).toBe("DB_0");
		expect(map.bindings[128]).toBe("DB_1");
		expect(map.bindings[254]).toBe("DB_1");
		expect(map.bindings[255]).toBe("DB_2");
	});

	it.each([
		["", "SHARDS is empty"],
		["0-127:DB_0", "bucket 128 is not mapped"],
		["0-128:DB_0,128-255:DB_1", "bucket 128 is mapped twice"],
		["0-255:DB_3", "names DB_3, which is not a declared D1 binding DB_k"],
		["0-255:DB", "names DB, which is not a declared D1 binding DB_k"],
		["0-256:DB_0", "is not a range within 0-255"],
		["10-5:DB_0", "is not a range within 0-255"],
		["0x0-255:DB_0", "is not lo-hi:DB_k or b:DB_k"],
		["0-255", "is not lo-hi:DB_k or b:DB_k"],
	])("refuses %j, naming the fault", (text, fault) => {
		const map = parseShards(text, DECLARED);
		expect(map.ok).toBe(false);
		if (!map.ok) expect(map.fault).toContain(fault);
	});

	it("lists the shard bindings in binding order, nothing else", () => {
		expect(shardBindings(["DB_10", "DOCS", "DB_2", "DB", "DB_0", "DB_01"])).toEqual(["DB_0", "DB_2", "DB_10"]);
	});
});

describe("bucketed ids", () => {
	it("are version-8 uuids of RFC 9562 whose first octet is the bucket", () => {
		for (const bucket of [0, 1, 127, 128, 255]) {
			const id = bucketedId(bucket);
			expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
			expect(Number.parseInt(id.slice(0, 2), 16)).toBe(bucket);
			expect(bucketOfId(id)).toBe(bucket);
		}
	});

	it("keep 114 random bits: two ids of a bucket differ", () => {
		const ids = new Set(Array.from({ length: 1000 }, () => bucketedId(7)));
		expect(ids.size).toBe(1000);
	});

	it("name no bucket for a version-4 id (an account from before): its siblings stay version 4", () => {
		const old = crypto.randomUUID();
		expect(bucketOfId(old)).toBeUndefined();
		expect(bucketOfId("not a uuid")).toBeUndefined();
		expect(sibling(old)).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4/);
		const account = bucketedId(200);
		expect(bucketOfId(sibling(account))).toBe(200);
	});

	it("carry the bucket in a secret's first byte, its first two characters", () => {
		for (const bucket of [0, 63, 64, 200, 255]) {
			const bytes = crypto.getRandomValues(new Uint8Array(48));
			bytes[0] = bucket;
			const secret = base64Url(bytes);
			expect(secret).toHaveLength(64);
			expect(bucketOfSecret(secret)).toBe(bucket);
		}
	});
});

describe("a map written back", () => {
	it("reads as it was written, runs compressed", () => {
		for (const text of ["0-127:DB_0,128-255:DB_1", "0:DB_1,1-254:DB_0,255:DB_2", "0-255:DB_0"]) {
			const map = parseShards(text, DECLARED);
			if (!map.ok) throw new Error(map.fault);
			expect(formatShards(map.bindings)).toBe(text);
		}
	});

	it("moves one bucket, splitting its run", () => {
		const map = parseShards("0-127:DB_0,128-255:DB_1", DECLARED);
		if (!map.ok) throw new Error(map.fault);
		expect(remapBucket(map.bindings, 7, "DB_1")).toBe("0-6:DB_0,7:DB_1,8-127:DB_0,128-255:DB_1");
		expect(remapBucket(map.bindings, 127, "DB_1")).toBe("0-126:DB_0,127-255:DB_1");
		expect(remapBucket(map.bindings, 0, "DB_2")).toBe("0:DB_2,1-127:DB_0,128-255:DB_1");
	});
});

import { toHex } from "../base/crypto";

// The bytes of docs, in the R2 bucket DOCS under `objects/<uuid>`. The bucket stays private:
// every byte goes in and out through the Worker.

export const newObjectKey = () => `objects/${crypto.randomUUID()}`;

// `lost`: the PUT no longer holds its URL (its `alive` answered false).
export type Stored = { ok: true; hash: string } | { ok: false; lost?: true };

class Lost extends Error {}

// Streams `body` into R2 as `key` while hashing it, holding one chunk at a time: each chunk
// goes to the digest, then on towards R2, and the next is read only when R2 has taken it. (A
// tee() of the body would let the faster branch, the digest, read ahead, and the chunks R2 has
// not taken yet would pile up in memory.) R2 learns the length up front through the
// FixedLengthStream, which also fails the PUT when the body ends short of it or runs past it:
// then nothing is stored. `alive`, when given, is asked every `everyMs` while bytes come; a
// false answer ends the PUT (lost), and nothing is stored.
export async function storeStreaming(
	bucket: R2Bucket,
	key: string,
	body: ReadableStream<Uint8Array>,
	length: number,
	alive?: { everyMs: number; check: () => Promise<boolean> },
): Promise<Stored> {
	const digest = new crypto.DigestStream("SHA-256");
	const hashing = digest.getWriter();
	let checked = Date.now();
	let lost = false;
	const hashed = new TransformStream<Uint8Array, Uint8Array>({
		async transform(chunk, controller) {
			// The Worker's clock moves with I/O, which each chunk read is.
			if (alive && Date.now() - checked >= alive.everyMs) {
				checked = Date.now();
				if (!(await alive.check())) {
					lost = true;
					throw new Lost("the PUT no longer holds its URL");
				}
			}
			await hashing.write(chunk);
			controller.enqueue(chunk);
		},
		async flush() {
			await hashing.close();
		},
	});
	const sized = new FixedLengthStream(length);
	const piped = body.pipeThrough(hashed).pipeTo(sized.writable);
	const [pipe, put] = await Promise.allSettled([piped, bucket.put(key, sized.readable)]);
	if (pipe.status === "rejected" || put.status === "rejected") {
		// A put that failed part way may still have left an object behind in some runtimes.
		await bucket.delete(key).catch(() => undefined);
		return lost ? { ok: false, lost: true } : { ok: false };
	}
	return { ok: true, hash: toHex(new Uint8Array(await digest.digest)) };
}

// Deletes objects no row refers to. R2 takes up to 1000 keys in one call.
export async function deleteObjects(bucket: R2Bucket, keys: string[]): Promise<void> {
	for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000));
}

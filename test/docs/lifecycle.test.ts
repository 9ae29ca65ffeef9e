import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AccountDO } from "../../src/objects";
import { call, expectError, fetchWithEnv, randomAddress, fingerprint } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { clockPast, until } from "../support/waiting";
import { loggedErrors } from "../support/faults";
import { objectEnv, fireAccountAlarm } from "../support/objects";
import {
	attachDoc,
	docBytes,
	docObject,
	docPath,
	download,
	downloadUrl,
	patterned,
	putFile,
	uploaded,
	uploadObject,
	uploadUrl,
	expireUpload,
} from "./helpers";
import { dbOf } from "../support/shards";

// What happens to the bytes over time (docs/files.md): the account's alarm releases expired
// uploads and deletes their objects; deleting a doc or an upload deletes its object at once,
// or, when R2 fails, from the alarm later through doc_garbage. Nothing is left in R2 that no
// row refers to.

const garbageOf = async (account: string) =>
	(
		await dbOf(account)
			.prepare("SELECT object FROM doc_garbage WHERE account = ?")
			.bind(account)
			.all<{ object: string }>()
	).results.map((row) => row.object);

// A DOCS bucket whose deletes fail, as R2 may; everything else works.
function failingDeletes(bucket: R2Bucket): R2Bucket {
	return new Proxy(bucket, {
		get(target, property) {
			if (property === "delete") return () => Promise.reject(new Error("injected R2 failure"));
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

describe("unattached uploads", () => {
	it("are released at their validity_ts by the account's alarm: object, row and bytes", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		// Far enough ahead for the PUT below to come first on a loaded machine.
		const validity = Date.now() / 1000 + 3;
		const filled = await uploadUrl(admin.secret, validity);
		const bytes = patterned(3000, 11);
		expect((await putFile(filled.url, bytes)).status).toBe(200);
		const empty = await uploadUrl(admin.secret, validity);
		// One that lives on, and an attached one, which the alarm must leave alone.
		const later = await uploaded(admin.secret, patterned(20, 12));
		await attachDoc(admin.secret, twin, "kept", patterned(30, 13));
		const key = (await uploadObject(filled.handler))!;
		expect(await env.DOCS.head(key)).not.toBeNull();
		expect(await docBytes(admin.account)).toBe(3050);
		const stub = env.ACCOUNTS.getByName(admin.account);
		const alarm = await runInDurableObject(stub, (_: AccountDO, state) => state.storage.getAlarm());
		expect(alarm).toBe(Math.ceil(validity * 1000));

		await clockPast(validity);
		// The alarm fires on its own; at most a short wait for it.
		await until(
			async () => [await uploadObject(filled.handler), await uploadObject(empty.handler)],
			(rows) => rows.every((row) => row === undefined),
			"the alarm to release the uploads",
			10_000,
		);
		await until(
			() => env.DOCS.head(key),
			(object) => object === null,
			"the object to be deleted",
			10_000,
		);
		expect(await docBytes(admin.account)).toBe(50);
		expect(await garbageOf(admin.account)).toEqual([]);
		// Dead everywhere, as any unknown handler.
		expectError(await putFile(filled.url, bytes), 404, 404171);
		expectError(await putFile(empty.url, bytes), 404, 404171);
		expectError(
			await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { a: { handler: filled.handler } } } }),
			404,
			404171,
		);
		expectError(await call("DELETE", `/cache/${empty.handler}`, { secret: admin.secret }), 404, 404171);
		// What was not due stays: the live upload and the doc.
		expect(await env.DOCS.head((await uploadObject(later.handler))!)).not.toBeNull();
		expect((await download(await downloadUrl(admin.secret, twin, "kept"))).bytes).toEqual(patterned(30, 13));
		// And the alarm is set again for the next expiry.
		expect(await runInDurableObject(stub, (_: AccountDO, state) => state.storage.getAlarm())).toBe(
			Math.ceil(later.validity_ts * 1000),
		);
	});
});

describe("objects of deleted docs and uploads", () => {
	it("are deleted from R2 at once: a doc, an account's docs on a twin, an invalidated upload", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "one", patterned(10, 1));
		await attachDoc(admin.secret, twin, "two", patterned(11, 2));
		await attachDoc(admin.secret, twin, "three", patterned(12, 3));
		const [one, two, three] = await Promise.all(["one", "two", "three"].map((name) => docObject(twin, name)));
		expect((await call("DELETE", docPath(twin, "one"), { secret: admin.secret })).status).toBe(200);
		expect(await env.DOCS.head(one)).toBeNull();
		expect(await env.DOCS.head(two)).not.toBeNull();
		expect((await call("DELETE", docPath(twin), { secret: admin.secret })).status).toBe(200);
		expect(await env.DOCS.head(two)).toBeNull();
		expect(await env.DOCS.head(three)).toBeNull();
		const up = await uploaded(admin.secret, patterned(13, 4));
		const key = (await uploadObject(up.handler))!;
		expect((await call("DELETE", `/cache/${up.handler}`, { secret: admin.secret })).status).toBe(200);
		expect(await env.DOCS.head(key)).toBeNull();
		expect(await garbageOf(admin.account)).toEqual([]);
		expect(await docBytes(admin.account)).toBe(0);
	});

	it("wait in doc_garbage when R2 fails, and the alarm deletes them once it works again", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "doomed", patterned(40, 1));
		const docKey = await docObject(twin, "doomed");
		const up = await uploaded(admin.secret, patterned(41, 2));
		const uploadKey = (await uploadObject(up.handler))!;
		const stub = env.ACCOUNTS.getByName(admin.account);
		const restore = await objectEnv(admin.account, { DOCS: failingDeletes(env.DOCS) });

		// The deletes answer as usual: the rows are gone, the bytes no longer counted.
		expect((await call("DELETE", docPath(twin, "doomed"), { secret: admin.secret })).status).toBe(200);
		expect((await call("DELETE", `/cache/${up.handler}`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", docPath(twin, "doomed"), { secret: admin.secret }), 404, 404102);
		expect(await docBytes(admin.account)).toBe(0);
		// The objects are still in R2, their keys in the outbox, and the alarm is set to retry.
		expect(await env.DOCS.head(docKey)).not.toBeNull();
		expect(await env.DOCS.head(uploadKey)).not.toBeNull();
		expect((await garbageOf(admin.account)).sort()).toEqual([docKey, uploadKey].sort());
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("injected R2 failure"));
		const retryAt = await runInDurableObject(stub, (_: AccountDO, state) => state.storage.getAlarm());
		expect(retryAt).toBeGreaterThan(Date.now());
		expect(retryAt).toBeLessThanOrEqual(Date.now() + 61_000);

		// An alarm while R2 still fails keeps them, and sets itself again.
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		expect((await garbageOf(admin.account)).length).toBe(2);
		expect(await env.DOCS.head(docKey)).not.toBeNull();
		expect(await runInDurableObject(stub, (_: AccountDO, state) => state.storage.getAlarm())).toBeGreaterThan(
			Date.now(),
		);

		// Once R2 works, the next alarm deletes both and forgets them.
		await restore();
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		expect(await env.DOCS.head(docKey)).toBeNull();
		expect(await env.DOCS.head(uploadKey)).toBeNull();
		expect(await garbageOf(admin.account)).toEqual([]);
	});

	it("leave nothing behind when the upload URL is invalidated while its bytes stream in", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		let feed!: ReadableStreamDefaultController<Uint8Array>;
		const body = new ReadableStream<Uint8Array>({
			start: (controller) => {
				feed = controller;
			},
		});
		const headers = { "content-length": "20", "cf-connecting-ip": randomAddress() };
		// Straight to the Worker's handler, so the test decides when each byte arrives.
		const answer = fetchWithEnv(new Request(created.url, { method: "PUT", body, headers }), {});
		feed.enqueue(patterned(10, 1));
		// The PUT has claimed the URL: its object key and length are in the row.
		const key = (await until(
			() => uploadObject(created.handler),
			(object) => typeof object === "string",
			"the PUT to claim the URL",
			10_000,
		))!;
		expect(await docBytes(admin.account)).toBe(20);
		expect((await call("DELETE", `/cache/${created.handler}`, { secret: admin.secret })).status).toBe(200);
		feed.enqueue(patterned(10, 2));
		feed.close();
		const res = await answer;
		expect(res.status).toBe(404);
		expect(((await res.json()) as { subcode: number }).subcode).toBe(404171);
		// What reached R2 after the invalidation was deleted by the PUT itself.
		expect(await env.DOCS.head(key)).toBeNull();
		expect(await docBytes(admin.account)).toBe(0);
		expect(await garbageOf(admin.account)).toEqual([]);
	});
});

describe("the tidying after a delete", () => {
	// It reads the account's expired uploads and garbage, other users' included: that is the
	// object's work, and the caller's Server-Timing does not count it.
	it("costs the caller the same whatever other users of the account left to tidy", async () => {
		const times = (text: string) => text.replace(/"(\w+_ts)":[\d.]+/g, '"$1":"ts"');
		const deletion = async (leftovers: boolean) => {
			const admin = await bootstrap();
			const twin = await newTwin(admin.secret);
			await attachDoc(admin.secret, twin, "a.txt", patterned(10, 1));
			if (leftovers) {
				const other = await userWithRules(admin, {});
				for (const seed of [2, 3]) await expireUpload((await uploaded(other.secret, patterned(10, seed))).handler);
			}
			const res = await call("DELETE", docPath(twin, "a.txt"), { secret: admin.secret });
			expect(res.status).toBe(200);
			return fingerprint(res, (text) => times(text.replaceAll(admin.account, "ACCOUNT")));
		};
		expect(await deletion(true)).toEqual(await deletion(false));
	});
});

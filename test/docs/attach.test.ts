import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret, userWith, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { objectEnv } from "../support/objects";
import {
	attachDoc,
	docBytes,
	docObject,
	docPath,
	expireUpload,
	patterned,
	bucketReadingWhole,
	putFile,
	sha256Hex,
	uploaded,
	uploadObject,
	uploadUrl,
} from "./helpers";
import { dbOf, idOf } from "../support/shards";

// attach_twin_doc (docs/files.md "Uploading and attaching"): the record it answers, the names it takes, and every refusal
// in its order, each consuming nothing.

const attach = (secret: string, twin: string, docs: Record<string, unknown>) =>
	call("POST", docPath(twin), { secret, body: { docs } });

const names = async (secret: string, twin: string) =>
	Object.keys((await call("GET", docPath(twin), { secret })).body.docs);

// The handler is still the caller's and still holds its file: it attaches now.
async function stillAttaches(
	secret: string,
	twin: string,
	handler: string,
	name = `later-${crypto.randomUUID().slice(0, 8)}`,
) {
	const res = await attach(secret, twin, { [name]: { handler } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
}

// A user of another account whose role sees the twins described `{shared: true}`.
async function neighbour(): Promise<Account> {
	return userWithRules(await bootstrap(), { twin: "TWIN.shared == true" });
}

describe("attach_twin_doc", () => {
	it("files an upload under a name and answers the record, keys in the contract's order", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const bytes = patterned(1234, 5);
		const up = await uploaded(admin.secret, bytes);
		const key = await uploadObject(up.handler);
		const before = Date.now() / 1000;
		const res = await attach(admin.secret, twin, {
			"report.pdf": { handler: up.handler, hash: (await sha256Hex(bytes)).toUpperCase() },
		});
		expect(res.status).toBe(201);
		expect(Object.keys(res.body)).toEqual(["docs"]);
		const record = res.body.docs["report.pdf"];
		expect(Object.keys(record)).toEqual([
			"creation_certificate",
			"storage_class",
			"content_type",
			"updated_ts",
			"status",
		]);
		expect(Object.keys(record.creation_certificate)).toEqual(["size", "hash", "created_ts", "creator"]);
		expect(record).toEqual({
			creation_certificate: {
				size: 1234,
				hash: await sha256Hex(bytes),
				created_ts: expect.any(Number),
				creator: admin.account,
			},
			storage_class: "access_optimized",
			content_type: "application/octet-stream",
			updated_ts: record.creation_certificate.created_ts,
			status: "ok",
		});
		expect(record.updated_ts).toBeGreaterThanOrEqual(Math.floor(before) - 1);
		// Moved, not copied: the doc took over the upload's object, and the handler is consumed.
		expect(await docObject(twin, "report.pdf")).toBe(key);
		expect(await uploadObject(up.handler)).toBeUndefined();
		expect(await docBytes(admin.account)).toBe(1234);
		// The same record on a read.
		expect((await call("GET", docPath(twin, "report.pdf"), { secret: admin.secret })).body).toEqual(record);
	});

	it("takes no hash, storage_class cost_optimized, a description, and null as no description", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const [a, b, c] = await Promise.all([1, 2, 3].map((seed) => uploaded(admin.secret, patterned(10 * seed, seed))));
		const res = await attach(admin.secret, twin, {
			a: { handler: a.handler },
			"b.txt": { handler: b.handler, storage_class: "cost_optimized", description: { title: "B", tags: ["x"] } },
			"c/d": { handler: c.handler, description: null },
		});
		expect(res.status).toBe(201);
		expect(Object.keys(res.body.docs).sort()).toEqual(["a", "b.txt", "c/d"]);
		expect(res.body.docs.a.storage_class).toBe("access_optimized");
		expect(res.body.docs["b.txt"]).toMatchObject({
			storage_class: "cost_optimized",
			description: { title: "B", tags: ["x"] },
		});
		expect(Object.keys(res.body.docs["b.txt"])).toEqual([
			"creation_certificate",
			"storage_class",
			"content_type",
			"updated_ts",
			"description",
			"status",
		]);
		expect(res.body.docs["c/d"]).not.toHaveProperty("description");
		expect(res.body.docs["c/d"].creation_certificate.size).toBe(30);
		// An empty description object is shown as it is.
		const e = await attachDoc(admin.secret, twin, "e", patterned(1), { description: {} });
		expect(e.description).toEqual({});
	});

	it("takes names with folders, up to five deep, and 32 characters a segment", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const long = "x".repeat(32);
		const good = ["a/b/c.txt", "1/2/3/4/5/six.tar", `${long}/${long}.abcdefgh`, "UPPER_lower-09", "n.PDF"];
		for (const [i, name] of good.entries()) await attachDoc(admin.secret, twin, name, patterned(i + 1, i + 1));
		expect((await names(admin.secret, twin)).sort()).toEqual([...good].sort());
	});

	it("refuses names the pattern does not take with 400101, and attaches nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const up = await uploaded(admin.secret, patterned(10));
		const bad = [
			"",
			"/a",
			"a/",
			"a//b",
			"a/./b",
			"../a",
			".txt",
			"a.b.c",
			"a b",
			"a%2Fb",
			"ü",
			"a\\b",
			"x".repeat(33),
			"a.abcdefghi",
			"a.",
			"1/2/3/4/5/6/seven",
		];
		for (const name of bad) {
			const res = await attach(admin.secret, twin, { [name]: { handler: up.handler } });
			expect([name, res.status]).toEqual([name, 400]);
			expectError(res, 400, 400101);
		}
		expect(await names(admin.secret, twin)).toEqual([]);
		await stillAttaches(admin.secret, twin, up.handler);
	});

	it("refuses malformed bodies with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const up = await uploaded(admin.secret, patterned(10));
		const eleven = Object.fromEntries(
			Array.from({ length: 11 }, (_, i) => [`n${i}`, { handler: crypto.randomUUID() }]),
		);
		const bad: unknown[] = [
			{},
			{ docs: {} },
			{ docs: eleven },
			{ docs: [] },
			{ docs: { a: { handler: up.handler } }, extra: 1 },
			{ docs: { a: {} } },
			{ docs: { a: { handler: "not-a-uuid" } } },
			{ docs: { a: { handler: up.handler, hash: "abc" } } },
			{ docs: { a: { handler: up.handler, hash: "g".repeat(64) } } },
			{ docs: { a: { handler: up.handler, hash: `${up.hash}0` } } },
			{ docs: { a: { handler: up.handler, storage_class: "glacier" } } },
			{ docs: { a: { handler: up.handler, storage_class: null } } },
			{ docs: { a: { handler: up.handler, description: "text" } } },
			{ docs: { a: { handler: up.handler, description: { "Not-a-key": 1 } } } },
			{ docs: { a: { handler: up.handler, description: { big: "x".repeat(33 * 1024) } } } },
			{ docs: { a: { handler: up.handler, status: "ok" } } },
		];
		for (const body of bad) expectError(await call("POST", docPath(twin), { secret: admin.secret, body }), 400, 400101);
		expectError(await call("POST", docPath(twin), { secret: admin.secret, body: "not json" }), 400, 400102);
		expect(await names(admin.secret, twin)).toEqual([]);
		await stillAttaches(admin.secret, twin, up.handler);
	});

	it("refuses a handler given twice in one attach with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const up = await uploaded(admin.secret, patterned(10));
		const res = await attach(admin.secret, twin, { a: { handler: up.handler }, b: { handler: up.handler } });
		expectError(res, 400, 400101);
		expect(await names(admin.secret, twin)).toEqual([]);
		await stillAttaches(admin.secret, twin, up.handler);
	});

	it("attaches ten docs at once, all or nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const ups = await Promise.all(
			Array.from({ length: 10 }, (_, i) => uploaded(admin.secret, patterned(i + 1, i + 1))),
		);
		// One unknown handler among them: none is attached, none consumed.
		const docs = Object.fromEntries(
			ups.map((up, i) => [`d${i}`, { handler: i === 9 ? crypto.randomUUID() : up.handler }]),
		);
		expectError(await attach(admin.secret, twin, docs), 404, 404171);
		expect(await names(admin.secret, twin)).toEqual([]);
		for (const up of ups) expect(await uploadObject(up.handler)).toEqual(expect.any(String));
		const res = await attach(
			admin.secret,
			twin,
			Object.fromEntries(ups.map((up, i) => [`d${i}`, { handler: up.handler }])),
		);
		expect(res.status).toBe(201);
		expect(Object.keys(res.body.docs).sort()).toEqual(ups.map((_, i) => `d${i}`).sort());
		expect((await names(admin.secret, twin)).length).toBe(10);
	});

	it("refuses a hash that differs from the upload's with 400171 naming the docs; nothing attached, handlers still usable", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const [a, b, c] = await Promise.all([1, 2, 3].map((seed) => uploaded(admin.secret, patterned(100, seed))));
		const res = await attach(admin.secret, twin, {
			"ok.bin": { handler: a.handler, hash: a.hash },
			"wrong.bin": { handler: b.handler, hash: c.hash },
			"f/also-wrong": { handler: c.handler, hash: "0".repeat(64) },
		});
		expectError(res, 400, 400171);
		expect(res.body.details).toEqual([
			{ path: "docs.wrong.bin.hash", message: expect.any(String) },
			{ path: "docs.f/also-wrong.hash", message: expect.any(String) },
		]);
		expect(res.body.description).toContain("wrong.bin");
		expect(res.body.description).toContain("f/also-wrong");
		expect(res.body.description).not.toContain("ok.bin");
		expect(await names(admin.secret, twin)).toEqual([]);
		expect(await docBytes(admin.account)).toBe(300);
		// Nothing was consumed: with the right hashes all three attach.
		const fixed = await attach(admin.secret, twin, {
			"ok.bin": { handler: a.handler, hash: a.hash },
			"wrong.bin": { handler: b.handler, hash: b.hash },
			"f/also-wrong": { handler: c.handler, hash: c.hash },
		});
		expect(fixed.status).toBe(201);
	});

	it("refuses a handler whose URL has received no file with 409171, or whose PUT failed", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const empty = await uploadUrl(admin.secret);
		const full = await uploaded(admin.secret, patterned(10));
		const res = await attach(admin.secret, twin, {
			full: { handler: full.handler },
			empty: { handler: empty.handler },
		});
		expectError(res, 409, 409171);
		expect(res.body.description).toContain("empty");
		expect(await names(admin.secret, twin)).toEqual([]);
		// A PUT that ended short leaves it as it was.
		const stream = new ReadableStream<Uint8Array>({
			start(controller) {
				controller.enqueue(patterned(5));
				controller.close();
			},
		});
		expectError(
			await putFile(empty.url, stream, { "content-length": "9" }, { DOCS: bucketReadingWhole(env.DOCS).bucket }),
			400,
			400101,
		);
		expectError(await attach(admin.secret, twin, { empty: { handler: empty.handler } }), 409, 409171);
		// Once the file is there it attaches.
		expect((await putFile(empty.url, patterned(9))).status).toBe(200);
		await stillAttaches(admin.secret, twin, empty.handler, "empty");
		await stillAttaches(admin.secret, twin, full.handler, "full");
	});

	it("refuses another user's handler, of the account or another one, with 404171, as an unknown one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { shared: true });
		const colleague = await createUser(admin, admin.role, "colleague");
		const colleagueSecret = await issueSecret(admin, colleague);
		const other = await neighbour();
		expect((await call("GET", `/twins/${twin}`, { secret: other.secret })).status).toBe(200);
		const mine = await uploaded(admin.secret, patterned(10));
		const answers = [];
		for (const secret of [colleagueSecret, other.secret]) {
			const res = await attach(secret, twin, { a: { handler: mine.handler } });
			expectError(res, 404, 404171);
			answers.push(res.body.description);
		}
		const unknown = await attach(admin.secret, twin, { a: { handler: crypto.randomUUID() } });
		expectError(unknown, 404, 404171);
		expect(new Set([...answers, unknown.body.description]).size).toBe(1);
		// Even an account's administrator cannot file its user's upload.
		const colleagues = await uploaded(colleagueSecret, patterned(10, 2));
		expectError(await attach(admin.secret, twin, { b: { handler: colleagues.handler } }), 404, 404171);
		expect(await names(admin.secret, twin)).toEqual([]);
		await stillAttaches(admin.secret, twin, mine.handler);
		await stillAttaches(colleagueSecret, twin, colleagues.handler);
	});

	it("answers for another user's handler exactly as for one that never existed, every header", async () => {
		const admin = await bootstrap();
		const colleague = await createUser(admin, admin.role, "colleague");
		const colleagueSecret = await issueSecret(admin, colleague);
		const stranger = await bootstrap();
		const mine = await uploaded(admin.secret, patterned(10));
		const nowhere = crypto.randomUUID();
		const swap = (text: string) => text.replaceAll(mine.handler, nowhere);
		for (const caller of [colleagueSecret, stranger.secret]) {
			const twin = await newTwin(caller);
			const foreign = await attach(caller, twin, { a: { handler: mine.handler } });
			const absent = await attach(caller, twin, { a: { handler: nowhere } });
			expectError(foreign, 404, 404171);
			expect(fingerprint(foreign, swap)).toEqual(fingerprint(absent));
			const invalidated = await call("DELETE", `/cache/${mine.handler}`, { secret: caller });
			const unknown = await call("DELETE", `/cache/${nowhere}`, { secret: caller });
			expectError(invalidated, 404, 404171);
			expect(fingerprint(invalidated, swap)).toEqual(fingerprint(unknown));
		}
		await stillAttaches(admin.secret, await newTwin(admin.secret), mine.handler);
	});

	it("refuses expired, invalidated and already attached handlers with 404171", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const expired = await uploaded(admin.secret, patterned(10, 1));
		await expireUpload(expired.handler);
		expectError(await attach(admin.secret, twin, { a: { handler: expired.handler } }), 404, 404171);
		const invalidated = await uploaded(admin.secret, patterned(10, 2));
		expect((await call("DELETE", `/cache/${invalidated.handler}`, { secret: admin.secret })).status).toBe(200);
		expectError(await attach(admin.secret, twin, { b: { handler: invalidated.handler } }), 404, 404171);
		const used = await uploaded(admin.secret, patterned(10, 3));
		await stillAttaches(admin.secret, twin, used.handler, "c");
		// One upload attaches once, on this twin or another.
		expectError(await attach(admin.secret, twin, { d: { handler: used.handler } }), 404, 404171);
		expectError(await attach(admin.secret, await newTwin(admin.secret), { c: { handler: used.handler } }), 404, 404171);
		// Its URL is dead too.
		expectError(await putFile(used.url, patterned(10, 3)), 404, 404171);
		expect(await names(admin.secret, twin)).toEqual(["c"]);
	});

	it("refuses a taken name with 409101, whichever account holds it; nothing consumed", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { shared: true });
		await attachDoc(admin.secret, twin, "taken.txt", patterned(5, 1));
		const other = await neighbour();
		const mine = await uploaded(admin.secret, patterned(6, 2));
		const theirs = await uploaded(other.secret, patterned(7, 3));
		const res = await attach(admin.secret, twin, {
			"free.txt": { handler: mine.handler },
			"taken.txt": { handler: (await uploaded(admin.secret, patterned(8, 4))).handler },
		});
		expectError(res, 409, 409101);
		expect(res.body.details).toEqual([{ path: "docs.taken.txt", message: expect.any(String) }]);
		expectError(await attach(other.secret, twin, { "taken.txt": { handler: theirs.handler } }), 409, 409101);
		// Names are unique per twin, not across twins; "free.txt" was not taken by the refusal.
		expect((await names(admin.secret, twin)).sort()).toEqual(["taken.txt"]);
		await stillAttaches(admin.secret, twin, mine.handler, "free.txt");
		await stillAttaches(other.secret, await newTwin(other.secret, { shared: true }), theirs.handler, "taken.txt");
		// The first doc is unchanged.
		expect(
			(await call("GET", docPath(twin, "taken.txt"), { secret: admin.secret })).body.creation_certificate.size,
		).toBe(5);
	});

	it("lets one of two accounts racing for a name on a twin have it; the other's handler is not consumed", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { shared: true });
		const other = await neighbour();
		const mine = await uploaded(admin.secret, patterned(5, 1));
		const theirs = await uploaded(other.secret, patterned(6, 2));
		const answers = await Promise.all([
			attach(admin.secret, twin, { same: { handler: mine.handler } }),
			attach(other.secret, twin, { same: { handler: theirs.handler } }),
		]);
		expect(answers.map((res) => res.status).sort()).toEqual([201, 409]);
		expectError(answers.find((res) => res.status === 409)!, 409, 409101);
		const [winner, loser] = answers[0].status === 201 ? [admin, other] : [other, admin];
		const losing = winner === admin ? theirs : mine;
		expect((await call("GET", docPath(twin, "same"), { secret: loser.secret })).body.creation_certificate.creator).toBe(
			winner.account,
		);
		expect(await docBytes(loser.account)).toBe(losing === mine ? 5 : 6);
		await stillAttaches(loser.secret, twin, losing.handler);
	});

	it("stops at MAX_TWIN_DOCS docs per twin and attaching account, with 409175: another account takes none of the owner's room", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { shared: true });
		const other = await neighbour();
		await objectEnv(admin.account, { MAX_TWIN_DOCS: "3" });
		await objectEnv(other.account, { MAX_TWIN_DOCS: "3" });
		// Another account that sees the twin fills its own room with empty docs...
		for (const name of ["x1", "x2", "x3"]) await attachDoc(other.secret, twin, name, patterned(0));
		const more = await uploaded(other.secret, patterned(0));
		const theirs = await attach(other.secret, twin, { x4: { handler: more.handler } });
		expectError(theirs, 409, 409175);
		expect(theirs.body.description).toContain("MAX_TWIN_DOCS");
		// ...and the owner still attaches three.
		await attachDoc(admin.secret, twin, "one", patterned(3, 2));
		const [a, b, c] = await Promise.all([4, 5, 6].map((seed) => uploaded(admin.secret, patterned(4, seed))));
		expectError(
			await attach(admin.secret, twin, {
				two: { handler: a.handler },
				three: { handler: b.handler },
				four: { handler: c.handler },
			}),
			409,
			409175,
		);
		expect((await names(admin.secret, twin)).sort()).toEqual(["one", "x1", "x2", "x3"]);
		await stillAttaches(admin.secret, twin, a.handler, "two");
		await stillAttaches(admin.secret, twin, b.handler, "three");
		expectError(await attach(admin.secret, twin, { four: { handler: c.handler } }), 409, 409175);
		// Another twin has room; a deleted doc makes room.
		await stillAttaches(admin.secret, await newTwin(admin.secret), c.handler, "four");
		expect((await call("DELETE", docPath(twin, "one"), { secret: admin.secret })).status).toBe(200);
		await attachDoc(admin.secret, twin, "five", patterned(2, 6));
	});

	it("holds MAX_TWIN_DOCS when two attaches of one account take the last place at once", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await objectEnv(admin.account, { MAX_TWIN_DOCS: "2" });
		await attachDoc(admin.secret, twin, "first", patterned(3, 1));
		const [one, two] = await Promise.all([
			uploaded(admin.secret, patterned(5, 2)),
			uploaded(admin.secret, patterned(6, 3)),
		]);
		const answers = await Promise.all([
			attach(admin.secret, twin, { one: { handler: one.handler } }),
			attach(admin.secret, twin, { two: { handler: two.handler } }),
		]);
		expect(answers.map((res) => res.status).sort()).toEqual([201, 409]);
		expectError(answers.find((res) => res.status === 409)!, 409, 409175);
		expect((await names(admin.secret, twin)).length).toBe(2);
	});

	it("refuses an attach when the account's bytes exceed MAX_DOC_BYTES with 409173", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const up = await uploaded(admin.secret, patterned(50));
		// The limit lowered after the upload was counted.
		await objectEnv(admin.account, { MAX_DOC_BYTES: "49" });
		const res = await attach(admin.secret, twin, { a: { handler: up.handler } });
		expectError(res, 409, 409173);
		expect(res.body.description).toContain("MAX_DOC_BYTES");
		expect(await names(admin.secret, twin)).toEqual([]);
		await objectEnv(admin.account, { MAX_DOC_BYTES: "50" });
		await stillAttaches(admin.secret, twin, up.handler);
	});

	it("checks in the contract's order: handlers, uploaded, hashes, names, count, bytes", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const full = await uploaded(admin.secret, patterned(10, 1));
		const empty = await uploadUrl(admin.secret);
		// Past every limit: one doc a twin, one byte an account.
		await objectEnv(admin.account, { MAX_TWIN_DOCS: "1", MAX_DOC_BYTES: "1" });
		const wrongHash = "f".repeat(64);
		// Every refusal at once: the handler comes first...
		expectError(
			await attach(admin.secret, twin, {
				x: { handler: crypto.randomUUID() },
				y: { handler: empty.handler },
				z: { handler: full.handler, hash: wrongHash },
			}),
			404,
			404171,
		);
		// ...then a URL with no file...
		expectError(
			await attach(admin.secret, twin, {
				y: { handler: empty.handler },
				z: { handler: full.handler, hash: wrongHash },
			}),
			409,
			409171,
		);
		// ...then the hash, before the name, the count and the bytes.
		await dbOf(twin)
			.prepare(
				"INSERT INTO docs (uuid, twin, name, account, object, size, hash, storage_class, description, created_ts, updated_ts) VALUES (?, ?, 'z', ?, ?, 1, ?, 'access_optimized', NULL, 1, 1)",
			)
			.bind(idOf(admin.account), twin, admin.account, `objects/${crypto.randomUUID()}`, "0".repeat(64))
			.run();
		expectError(await attach(admin.secret, twin, { z: { handler: full.handler, hash: wrongHash } }), 400, 400171);
		expectError(await attach(admin.secret, twin, { z: { handler: full.handler } }), 409, 409101);
		expectError(await attach(admin.secret, twin, { w: { handler: full.handler } }), 409, 409175);
		await objectEnv(admin.account, { MAX_TWIN_DOCS: "2" });
		expectError(await attach(admin.secret, twin, { w: { handler: full.handler } }), 409, 409173);
	});

	it("answers 404102 for an unknown twin, and needs attach_twin_doc in the statement", async () => {
		const admin = await bootstrap();
		const up = await uploaded(admin.secret, patterned(10));
		expectError(await attach(admin.secret, crypto.randomUUID(), { a: { handler: up.handler } }), 404, 404102);
		const user = await userWith(admin, { effect: "deny", actions: ["attach_twin_doc"] });
		const twin = await newTwin(admin.secret);
		expectError(await attach(user.secret, twin, { a: { handler: up.handler } }), 403, 403101);
		await stillAttaches(admin.secret, twin, up.handler);
	});

	it("attaches to a terminated twin, and to another account's twin the caller sees", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { shared: true });
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		const mine = await attachDoc(admin.secret, twin, "after-end", patterned(4, 1));
		expect(mine.creation_certificate.creator).toBe(admin.account);
		const other = await neighbour();
		const theirs = await attachDoc(other.secret, twin, "theirs", patterned(5, 2));
		expect(theirs.creation_certificate.creator).toBe(other.account);
		// Their bytes count against their account, not the twin owner's.
		expect(await docBytes(other.account)).toBe(5);
		expect(await docBytes(admin.account)).toBe(4);
	});
});

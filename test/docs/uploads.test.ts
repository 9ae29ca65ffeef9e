import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call, expectError, fetchWithEnv, fingerprint, randomAddress } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWith } from "../support/accounts";
import { newTwin } from "../support/twins";
import { objectEnv, fireAccountAlarm } from "../support/objects";
import {
	expireUpload,
	docBytes,
	docPath,
	patterned,
	bucketReadingWhole,
	putFile,
	sha256Hex,
	uploaded,
	uploadObject,
	uploadUrl,
} from "./helpers";
import { storeStreaming } from "../../src/storage/objects";
import { dbOf } from "../support/shards";

// create_upload_url, invalidate_upload_url and upload_to_cache (docs/files.md "Uploading and attaching"): the URL and its
// handler, who may use a handler, the PUT's refusals and what each leaves behind.

const nowSeconds = () => Date.now() / 1000;

// A body that hands out its bytes only when read, and tells whether it was: a refusal "before a
// byte is read" must leave it untouched. highWaterMark 0 keeps the stream from pulling ahead.
function watchedBody(bytes: Uint8Array) {
	const watch = { pulled: false };
	const body = new ReadableStream<Uint8Array>(
		{
			pull(controller) {
				watch.pulled = true;
				controller.enqueue(bytes);
				controller.close();
			},
		},
		{ highWaterMark: 0 },
	);
	return { body, watch };
}

// A PUT handed straight to the Worker's handler, so that its body is the stream the test holds
// and its Content-Length the one the test declares (sent over a binding, the runtime would set
// both itself), and `env` may change what the Worker reads.
async function putDirect(
	url: string,
	body: ReadableStream<Uint8Array>,
	length: number | undefined,
	changes: Partial<Record<keyof Env, unknown>> = {},
) {
	const headers = new Headers({ "cf-connecting-ip": randomAddress() });
	if (length !== undefined) headers.set("content-length", String(length));
	const response = await fetchWithEnv(new Request(url, { method: "PUT", body, headers }), changes);
	const text = await response.text();
	return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

// A stream of these chunks, then its end.
function chunks(...parts: Uint8Array[]) {
	return new ReadableStream<Uint8Array>({
		start(controller) {
			for (const part of parts) controller.enqueue(part);
			controller.close();
		},
	});
}

// Whether the bucket holds an object of exactly this size (sizes the tests below pick so that
// nothing else in the bucket has them).
async function anObjectOfSize(size: number) {
	let cursor: string | undefined;
	do {
		const page = await env.DOCS.list({ prefix: "objects/", cursor });
		if (page.objects.some((object) => object.size === size)) return true;
		cursor = page.truncated ? page.cursor : undefined;
	} while (cursor);
	return false;
}

describe("create_upload_url", () => {
	it("hands out a handler and a URL on PUBLIC_URL, valid for an hour by default", async () => {
		const admin = await bootstrap();
		const before = nowSeconds();
		const res = await call("POST", "/cache", { secret: admin.secret });
		expect(res.status).toBe(201);
		expect(Object.keys(res.body)).toEqual(["handler", "url", "validity_ts"]);
		const { handler, url, validity_ts } = res.body;
		// A version-8 uuid in the account's bucket (docs/scaling.md).
		expect(handler).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
		expect(handler.slice(0, 2)).toBe(admin.account.slice(0, 2));
		const parsed = new URL(url);
		expect(`${parsed.origin}${parsed.pathname}`).toBe(`${BASE}/cache/${admin.account}/${handler}`);
		expect([...parsed.searchParams.keys()]).toEqual(["token"]);
		// At least 128 random bits, URL-safe base64.
		expect(parsed.searchParams.get("token")).toMatch(/^[A-Za-z0-9_-]{22,}$/);
		expect(validity_ts).toBeGreaterThanOrEqual(before + 3600 - 1);
		expect(validity_ts).toBeLessThanOrEqual(nowSeconds() + 3600);
		// The token itself is not stored, only its hash.
		const row = await dbOf(handler)
			.prepare("SELECT * FROM uploads WHERE handler = ?")
			.bind(handler)
			.first<Record<string, unknown>>();
		expect(row).toMatchObject({
			account: admin.account,
			user: admin.user,
			state: "pending",
			object: null,
			size: null,
			hash: null,
		});
		expect(JSON.stringify(row)).not.toContain(parsed.searchParams.get("token"));
	});

	it("takes an empty body, {} or {validity_ts} within the next hour", async () => {
		const admin = await bootstrap();
		expect((await call("POST", "/cache", { secret: admin.secret, body: {} })).status).toBe(201);
		const soon = Math.floor(nowSeconds()) + 600;
		const res = await call("POST", "/cache", { secret: admin.secret, body: { validity_ts: soon } });
		expect(res.status).toBe(201);
		expect(res.body.validity_ts).toBe(soon);
		const edge = await call("POST", "/cache", {
			secret: admin.secret,
			body: { validity_ts: Math.floor(nowSeconds()) + 3599 },
		});
		expect(edge.status).toBe(201);
	});

	it("refuses validity_ts not later than now, past an hour, or not a time; and unknown fields", async () => {
		const admin = await bootstrap();
		const now = nowSeconds();
		const bad = [
			{ validity_ts: now - 10 },
			{ validity_ts: 0 },
			{ validity_ts: now + 3600 + 60 },
			{ validity_ts: "soon" },
			{ validity_ts: null },
			{ hours: 1 },
			[],
		];
		for (const body of bad) {
			const res = await call("POST", "/cache", { secret: admin.secret, body });
			expectError(res, 400, 400101);
		}
		const past = await call("POST", "/cache", { secret: admin.secret, body: { validity_ts: now - 10 } });
		expect(past.body.details).toEqual([expect.objectContaining({ path: "validity_ts" })]);
		// None of the refusals made a URL.
		expect(
			(
				await dbOf(admin.account)
					.prepare("SELECT count(*) AS n FROM uploads WHERE account = ?")
					.bind(admin.account)
					.first()
			)?.n,
		).toBe(0);
	});

	it("answers 500102 without PUBLIC_URL, and makes nothing", async () => {
		const admin = await bootstrap();
		for (const PUBLIC_URL of ["", "not a url"]) {
			const res = await call("POST", "/cache", { secret: admin.secret, env: { PUBLIC_URL } });
			expectError(res, 500, 500102);
			expect(res.body.description).toContain("PUBLIC_URL");
		}
		expect(
			(
				await dbOf(admin.account)
					.prepare("SELECT count(*) AS n FROM uploads WHERE account = ?")
					.bind(admin.account)
					.first()
			)?.n,
		).toBe(0);
	});

	it("needs create_upload_url in the statement", async () => {
		const admin = await bootstrap();
		const user = await userWith(admin, { effect: "deny", actions: ["create_upload_url"] });
		expectError(await call("POST", "/cache", { secret: user.secret }), 403, 403101);
		expect((await call("POST", "/cache", { secret: admin.secret })).status).toBe(201);
	});

	it("stops at MAX_UPLOADS live URLs per account (pending or uploaded); expired, invalidated or attached ones free a place", async () => {
		// The wrangler.toml defaults; the object is given a small MAX_UPLOADS below.
		expect([env.MAX_UPLOADS, env.MAX_TWIN_DOCS, env.MAX_DOC_BYTES, env.MAX_UPLOAD_BYTES].map(Number)).toEqual([
			1000, 1000, 10737418240, 100000000,
		]);
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_UPLOADS: "3" });
		const twin = await newTwin(admin.secret);
		const shortLived = await uploadUrl(admin.secret);
		const full = await uploaded(admin.secret, patterned(10, 1));
		const pending = await uploadUrl(admin.secret);
		const refused = await call("POST", "/cache", { secret: admin.secret });
		expectError(refused, 409, 409174);
		expect(refused.body.description).toContain("MAX_UPLOADS");
		// Another account is not affected.
		const other = await bootstrap();
		expect((await call("POST", "/cache", { secret: other.secret })).status).toBe(201);

		// An invalidated URL frees its place.
		expect((await call("DELETE", `/cache/${pending.handler}`, { secret: admin.secret })).status).toBe(200);
		const again = await uploadUrl(admin.secret);
		expectError(await call("POST", "/cache", { secret: admin.secret }), 409, 409174);
		// So does an attached one: its handler is consumed.
		expect(
			(await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { f: { handler: full.handler } } } }))
				.status,
		).toBe(201);
		await uploadUrl(admin.secret);
		expectError(await call("POST", "/cache", { secret: admin.secret }), 409, 409174);
		// And an expired one, even before the alarm has removed its row.
		await expireUpload(shortLived.handler);
		expect((await call("POST", "/cache", { secret: admin.secret })).status).toBe(201);
		expectError(await call("POST", "/cache", { secret: admin.secret }), 409, 409174);
		expect(again.handler).not.toBe(pending.handler);
	});
});

describe("upload_to_cache", () => {
	it("stores the bytes and answers their size and lowercase SHA-256; any Content-Type", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const bytes = patterned(100_003, 7);
		const put = await putFile(created.url, bytes, { "content-type": "text/html" });
		expect(put.status).toBe(200);
		expect(put.body).toEqual({ handler: created.handler, size: bytes.length, hash: await sha256Hex(bytes) });
		// In R2 under the key the row names, byte for byte, counted in the account's bytes.
		const key = await uploadObject(created.handler);
		expect(key).toMatch(/^objects\/[0-9a-f-]{36}$/);
		const stored = await env.DOCS.get(key!);
		expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(bytes);
		expect(await docBytes(admin.account)).toBe(bytes.length);
		const row = await dbOf(created.handler)
			.prepare("SELECT state, size, hash FROM uploads WHERE handler = ?")
			.bind(created.handler)
			.first();
		expect(row).toEqual({ state: "uploaded", size: bytes.length, hash: put.body.hash });
	});

	it("takes an empty file, and a body larger than the 64 KiB limit of JSON requests", async () => {
		const admin = await bootstrap();
		const empty = await putFile((await uploadUrl(admin.secret)).url, new Uint8Array(0));
		expect(empty.status).toBe(200);
		expect(empty.body.size).toBe(0);
		expect(empty.body.hash).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
		const big = patterned(65 * 1024 + 1, 3);
		expect((await putFile((await uploadUrl(admin.secret)).url, big)).body.hash).toBe(await sha256Hex(big));
	});

	it("holds one file per URL: a second PUT is 409172 and changes nothing", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const first = patterned(50, 1);
		expect((await putFile(created.url, first)).status).toBe(200);
		const key = await uploadObject(created.handler);
		expectError(await putFile(created.url, patterned(60, 2)), 409, 409172);
		expect(await uploadObject(created.handler)).toBe(key);
		expect(new Uint8Array(await (await env.DOCS.get(key!))!.arrayBuffer())).toEqual(first);
		expect(await docBytes(admin.account)).toBe(50);
	});

	it("lets one of two concurrent PUTs on a URL in; the other is 409176 while it streams, 409172 once it is done", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const [a, b] = await Promise.all([
			putFile(created.url, patterned(4000, 1)),
			putFile(created.url, patterned(5000, 2)),
		]);
		expect([a.status, b.status].sort()).toEqual([200, 409]);
		const winner = a.status === 200 ? a : b;
		const loser = a.status === 200 ? b : a;
		expect([409172, 409176]).toContain(loser.body.subcode);
		expect(await docBytes(admin.account)).toBe(winner.body.size);
	});

	it("answers 404171 for a wrong token, another account's path, an unknown handler or a bad token, alike", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const url = new URL(created.url);
		const token = url.searchParams.get("token")!;
		const bytes = patterned(10);
		const attempts = [
			`${BASE}/cache/${admin.account}/${created.handler}?token=${token.replace(/^./, token[0] === "A" ? "B" : "A")}`,
			`${BASE}/cache/${other.account}/${created.handler}?token=${token}`,
			`${BASE}/cache/${admin.account}/${crypto.randomUUID()}?token=${token}`,
			`${BASE}/cache/${crypto.randomUUID()}/${created.handler}?token=${token}`,
		];
		const answers = [];
		for (const attempt of attempts) {
			const res = await putFile(attempt, bytes);
			expectError(res, 404, 404171);
			answers.push(res.body.description);
		}
		expect(new Set(answers).size).toBe(1);
		// No token at all is a malformed request.
		expectError(await putFile(`${BASE}/cache/${admin.account}/${created.handler}`, bytes), 400, 400101);
		// The URL itself still works, once.
		expect((await putFile(created.url, bytes)).status).toBe(200);
		expect(await docBytes(other.account)).toBe(0);
	});

	it("answers a PUT on another account's path or with a wrong token exactly as one for a handler that never existed", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const token = new URL(created.url).searchParams.get("token")!;
		const nowhere = crypto.randomUUID();
		const swap = (text: string) => text.replaceAll(created.handler, nowhere);
		const bytes = patterned(10);
		for (const account of [admin.account, other.account]) {
			for (const tried of [token, "wrong-token"]) {
				if (account === admin.account && tried === token) continue;
				const foreign = await putFile(`${BASE}/cache/${account}/${created.handler}?token=${tried}`, bytes);
				const absent = await putFile(`${BASE}/cache/${account}/${nowhere}?token=${tried}`, bytes);
				expectError(foreign, 404, 404171);
				expect(fingerprint(foreign, swap)).toEqual(fingerprint(absent));
			}
		}
		expect((await putFile(created.url, bytes)).status).toBe(200);
	});

	it("needs a Content-Length: 411171, nothing read, the URL still pending", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const { body, watch } = watchedBody(patterned(10));
		expectError(await putDirect(created.url, body, undefined), 411, 411171);
		expect(watch.pulled).toBe(false);
		// Sent as a client would, chunked.
		expectError(await putFile(created.url, chunks(patterned(10))), 411, 411171);
		expect(await uploadObject(created.handler)).toBeNull();
		expect((await putFile(created.url, patterned(10))).status).toBe(200);
	});

	it("refuses a file over MAX_UPLOAD_BYTES with 413171 before a byte is read; the URL stays pending", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		// The default limit, 100,000,000 bytes, declared and never sent.
		const huge = watchedBody(patterned(10));
		const refused = await putDirect(created.url, huge.body, 100_000_001);
		expectError(refused, 413, 413171);
		expect(refused.body.description).toContain("MAX_UPLOAD_BYTES");
		expect(huge.watch.pulled).toBe(false);
		// A smaller limit, and a body that truly is too long for it.
		const over = watchedBody(patterned(101));
		expectError(await putDirect(created.url, over.body, 101, { MAX_UPLOAD_BYTES: "100" }), 413, 413171);
		expect(over.watch.pulled).toBe(false);
		expect(await uploadObject(created.handler)).toBeNull();
		expect(await docBytes(admin.account)).toBe(0);
		// At the limit exactly it goes in, and the body was read: the check above could have failed.
		const fits = watchedBody(patterned(100));
		const put = await putDirect(created.url, fits.body, 100, { MAX_UPLOAD_BYTES: "100" });
		expect(put.status).toBe(200);
		expect(fits.watch.pulled).toBe(true);
		expect(put.body).toEqual({ handler: created.handler, size: 100, hash: await sha256Hex(patterned(100)) });
	});

	it("refuses a body that ends short of, or runs past, its Content-Length with 400101; nothing kept, the URL pending again", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		// Sizes nothing else in the bucket has, to look for what a failed PUT might leave.
		const r2 = bucketReadingWhole(env.DOCS);
		const short = await putFile(
			created.url,
			chunks(patterned(12_341, 1)),
			{ "content-length": "12343" },
			{ DOCS: r2.bucket },
		);
		expectError(short, 400, 400101);
		expect(short.body.details).toEqual([expect.objectContaining({ path: "body" })]);
		const long = await putDirect(created.url, chunks(patterned(12_347, 2)), 12_345, { DOCS: r2.bucket });
		expectError(long, 400, 400101);
		// Each PUT tried its object, and deleted it when the body broke.
		expect(r2.attempted).toHaveLength(2);
		expect(r2.deleted).toEqual(r2.attempted);
		for (const size of [12_341, 12_343, 12_345, 12_347]) expect(await anObjectOfSize(size)).toBe(false);
		expect(await uploadObject(created.handler)).toBeNull();
		expect(await docBytes(admin.account)).toBe(0);
		// A complete PUT then works, and the handler attaches.
		const bytes = patterned(12_349, 3);
		const put = await putFile(created.url, bytes);
		expect(put.status).toBe(200);
		expect(put.body.size).toBe(12_349);
		expect(await docBytes(admin.account)).toBe(12_349);
		const twin = await newTwin(admin.secret);
		const attached = await call("POST", docPath(twin), {
			secret: admin.secret,
			body: { docs: { "x.bin": { handler: created.handler, hash: put.body.hash } } },
		});
		expect(attached.status).toBe(201);
	});

	it("refuses a file that would take the account past MAX_DOC_BYTES with 409173; the URL stays pending", async () => {
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_DOC_BYTES: "100" });
		const twin = await newTwin(admin.secret);
		const held = await uploaded(admin.secret, patterned(60, 1));
		const created = await uploadUrl(admin.secret);
		const refused = await putFile(created.url, patterned(41, 2));
		expectError(refused, 409, 409173);
		expect(refused.body.description).toContain("MAX_DOC_BYTES");
		expect(await uploadObject(created.handler)).toBeNull();
		expect(await docBytes(admin.account)).toBe(60);
		// Exactly up to the limit is fine, attached or not.
		expect(
			(await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { held: { handler: held.handler } } } }))
				.status,
		).toBe(201);
		expect((await putFile(created.url, patterned(40, 3))).status).toBe(200);
		expect(await docBytes(admin.account)).toBe(100);
		expectError(await putFile((await uploadUrl(admin.secret)).url, patterned(1, 4)), 409, 409173);
		// An empty file still fits.
		expect((await putFile((await uploadUrl(admin.secret)).url, new Uint8Array(0))).status).toBe(200);
		// Deleting the doc gives its bytes back.
		expect((await call("DELETE", docPath(twin, "held"), { secret: admin.secret })).status).toBe(200);
		expect(await docBytes(admin.account)).toBe(40);
		expect((await putFile((await uploadUrl(admin.secret)).url, patterned(60, 5))).status).toBe(200);
	});

	it("answers 404171 once the URL has expired, and the bytes sent are not kept", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		await expireUpload(created.handler);
		expectError(await putFile(created.url, patterned(23_451)), 404, 404171);
		expect(await anObjectOfSize(23_451)).toBe(false);
		expect(await docBytes(admin.account)).toBe(0);
	});

	it("statements do not apply: the token is the credential, whoever made the URL", async () => {
		const admin = await bootstrap();
		const user = await userWith(admin, { effect: "allow", actions: ["create_upload_url"] });
		const created = await uploadUrl(user.secret);
		expect((await putFile(created.url, patterned(5))).status).toBe(200);
	});

	it("spends SECRET_ATTEMPTS only on failed lookups (404171): refused PUTs of other kinds never reach 429", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		expect((await putFile(created.url, patterned(5))).status).toBe(200);
		// The limit is 30 a minute; twice as many answers that are not 404 stay what they are.
		const from = randomAddress();
		for (let i = 0; i < 61; i++)
			expectError(await putFile(created.url, patterned(5), { "cf-connecting-ip": from }), 409, 409172);
		// Wrong tokens from one address end in 429 within two windows' allowance.
		const wrong = `${BASE}/cache/${admin.account}/${created.handler}?token=wrong`;
		const statuses: number[] = [];
		for (let i = 0; i < 61 && !statuses.includes(429); i++)
			statuses.push((await putFile(wrong, patterned(5), { "cf-connecting-ip": from })).status);
		expect(statuses.at(-1)).toBe(429);
		expect(statuses.filter((status) => status === 404).length).toBeGreaterThanOrEqual(30);
		// Then the address is refused even with the right token; another address is not.
		expectError(await putFile(created.url, patterned(5), { "cf-connecting-ip": from }), 429, 429101);
		expectError(await putFile(created.url, patterned(5)), 409, 409172);
	});
});

describe("invalidate_upload_url", () => {
	it("ends the caller's URL at once and deletes its file; then PUT, attach and invalidate are 404171", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = await uploaded(admin.secret, patterned(300, 1));
		const key = await uploadObject(created.handler);
		expect(await env.DOCS.head(key!)).not.toBeNull();
		const res = await call("DELETE", `/cache/${created.handler}`, { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ handler: created.handler });
		expect(await env.DOCS.head(key!)).toBeNull();
		expect(await uploadObject(created.handler)).toBeUndefined();
		expect(await docBytes(admin.account)).toBe(0);
		expectError(await putFile(created.url, patterned(300, 1)), 404, 404171);
		expectError(
			await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { a: { handler: created.handler } } } }),
			404,
			404171,
		);
		expectError(await call("DELETE", `/cache/${created.handler}`, { secret: admin.secret }), 404, 404171);
	});

	it("ends a URL that has received no file yet", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		expect((await call("DELETE", `/cache/${created.handler}`, { secret: admin.secret })).status).toBe(200);
		expectError(await putFile(created.url, patterned(3)), 404, 404171);
	});

	it("is 404171 for another user's handler, of the account or of another, and for unknown, expired or attached ones", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const colleague = await createUser(admin, admin.role, "colleague");
		const colleagueSecret = await issueSecret(admin, colleague);
		const stranger = await bootstrap();
		const mine = await uploaded(admin.secret, patterned(10));
		for (const secret of [colleagueSecret, stranger.secret])
			expectError(await call("DELETE", `/cache/${mine.handler}`, { secret }), 404, 404171);
		expectError(await call("DELETE", `/cache/${crypto.randomUUID()}`, { secret: admin.secret }), 404, 404171);
		expectError(await call("DELETE", "/cache/not-a-uuid", { secret: admin.secret }), 400, 400101);
		const expiring = await uploaded(admin.secret, patterned(10, 2));
		await expireUpload(expiring.handler);
		expectError(await call("DELETE", `/cache/${expiring.handler}`, { secret: admin.secret }), 404, 404171);
		// The refusals left the handler alone: it attaches, then it is gone.
		expect(
			(await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { a: { handler: mine.handler } } } }))
				.status,
		).toBe(201);
		expectError(await call("DELETE", `/cache/${mine.handler}`, { secret: admin.secret }), 404, 404171);
		// Attached, the file is the doc's: the refused invalidation deleted nothing.
		expect((await call("GET", `${docPath(twin, "a")}`, { secret: admin.secret })).status).toBe(200);
	});
});

describe("an upload in flight", () => {
	// A body whose first chunk the Worker may read, and whose rest waits for `finish`; `reading`
	// resolves once the Worker has begun to read it, which it does only after claiming the URL.
	function heldBody(first: Uint8Array, rest: Uint8Array) {
		let started!: () => void;
		let finish!: () => void;
		const reading = new Promise<void>((resolve) => (started = resolve));
		const finished = new Promise<void>((resolve) => (finish = resolve));
		let sent = false;
		const body = new ReadableStream<Uint8Array>(
			{
				async pull(controller) {
					if (!sent) {
						sent = true;
						started();
						controller.enqueue(first);
						return;
					}
					await finished;
					controller.enqueue(rest);
					controller.close();
				},
			},
			{ highWaterMark: 0 },
		);
		return { body, reading, finish };
	}

	it("makes a second PUT 409176 and goes on undisturbed: it answers 200 and attaches", async () => {
		const admin = await bootstrap();
		const created = await uploadUrl(admin.secret);
		const bytes = patterned(3000, 7);
		const held = heldBody(bytes.slice(0, 1000), bytes.slice(1000));
		const first = putDirect(created.url, held.body, bytes.length);
		await held.reading;
		const second = await putFile(created.url, patterned(10, 8));
		expectError(second, 409, 409176);
		expect(second.body.description).toContain("in progress");
		// Attaching it now: no file yet.
		const twin = await newTwin(admin.secret);
		expectError(
			await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { f: { handler: created.handler } } } }),
			409,
			409171,
		);
		held.finish();
		const done = await first;
		expect(done.status).toBe(200);
		expect(done.body.hash).toBe(await sha256Hex(bytes));
		expect(await docBytes(admin.account)).toBe(3000);
		expectError(await putFile(created.url, patterned(10, 8)), 409, 409172);
		expect(
			(await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { f: { handler: created.handler } } } }))
				.status,
		).toBe(201);
	});

	describe("whose Worker died mid-stream", () => {
		// A PUT claimed through the account's object, as the Worker does, that never streams: its
		// Worker died. Its lease then passes (written into D1, as if two minutes had gone by).
		async function deadPut(length: number) {
			const admin = await bootstrap();
			const created = await uploadUrl(admin.secret);
			const token = new URL(created.url).searchParams.get("token")!;
			const tokenHash = await sha256Hex(new TextEncoder().encode(token));
			const stub = env.ACCOUNTS.getByName(admin.account);
			const claimed = await stub.claimUpload(admin.account, created.handler, tokenHash, length);
			expect(claimed.ok).toBe(true);
			expectError(await putFile(created.url, patterned(10)), 409, 409176);
			expect(await docBytes(admin.account)).toBe(length);
			const aged = await dbOf(created.handler)
				.prepare("UPDATE uploads SET lease_ts = ? WHERE handler = ? AND state = 'receiving'")
				.bind(Date.now() / 1000 - 1, created.handler)
				.run();
			expect(aged.meta.changes).toBe(1);
			return { admin, created, stub };
		}

		it("is released by the account's alarm once its lease has passed, long before the URL expires", async () => {
			const { admin, created } = await deadPut(777);
			await fireAccountAlarm(admin.account);
			const row = await dbOf(created.handler)
				.prepare("SELECT state, object, size, lease_ts FROM uploads WHERE handler = ?")
				.bind(created.handler)
				.first();
			expect(row).toEqual({ state: "pending", object: null, size: null, lease_ts: null });
			expect(await docBytes(admin.account)).toBe(0);
			expect(created.validity_ts).toBeGreaterThan(Date.now() / 1000 + 3000);
			const retried = await putFile(created.url, patterned(20, 3));
			expect(retried.status).toBe(200);
			expect(await docBytes(admin.account)).toBe(20);
		});

		it("gives way to the next PUT once its lease has passed, without waiting for the alarm", async () => {
			const { admin, created } = await deadPut(555);
			const retried = await putFile(created.url, patterned(30, 4));
			expect(retried.status).toBe(200);
			expect(retried.body.size).toBe(30);
			expect(await docBytes(admin.account)).toBe(30);
		});
	});

	it("renews its lease while its bytes stream, and stops, storing nothing, once it no longer holds the URL", async () => {
		const checks: boolean[] = [true, true, false];
		let asked = 0;
		const alive = { everyMs: 0, check: async () => checks[asked++] ?? false };
		const parts = Array.from({ length: 6 }, (_, i) => patterned(100, i + 1));
		const key = `objects/${crypto.randomUUID()}`;
		const r2 = bucketReadingWhole(env.DOCS);
		const stored = await storeStreaming(r2.bucket, key, chunks(...parts), 600, alive);
		expect(stored).toEqual({ ok: false, lost: true });
		expect(asked).toBe(3);
		expect(r2.deleted).toEqual([key]);
		expect(await env.DOCS.head(key)).toBeNull();
		// Alive throughout: stored whole.
		const kept = await storeStreaming(env.DOCS, key, chunks(...parts), 600, { everyMs: 0, check: async () => true });
		expect(kept.ok).toBe(true);
		expect((await env.DOCS.head(key))?.size).toBe(600);
	});
});

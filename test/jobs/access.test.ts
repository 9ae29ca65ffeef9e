// Who sees a batch, and how it is listed and read (docs/batches.md): a batch belongs to its
// creator, the account's administrator sees every one, and any other batch (another user's,
// another account's, a path that is no uuid) answers exactly as an absent one.
import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { call, expectError, fingerprint } from "../support/requests";
import { idOf } from "../support/shards";
import { fileBatch, holdJobs, jobEnv, plainUser, resultsOf, runJob, uploadedText } from "./helpers";

const seconds = () => Date.now() / 1000;

// `n` batches of the caller that end as they are made (hash_mismatch), from one upload: a
// wrong hash leaves the upload live for the next. Their uuids, in the order they were made.
async function endedBatches(secret: string, n: number): Promise<string[]> {
	const upload = await uploadedText(secret, "{}\n");
	const made: string[] = [];
	for (let i = 0; i < n; i++) {
		const res = await call("POST", "/batches", {
			secret,
			body: { operation: "create_twin", handler: upload.handler, hash: "0".repeat(64) },
		});
		expect(res.status).toBe(201);
		expect(res.body.status).toBe("hash_mismatch");
		made.push(res.body.batch);
	}
	return made;
}

// A completed batch of the caller: its record.
async function completedBatch(secret: string) {
	const made = await fileBatch(secret, "create_twin", [{}]);
	return runJob(secret, `/batches/${made.batch}`);
}

const list = (secret: string, query = "") => call("GET", `/batches${query ? `?${query}` : ""}`, { secret });

// Every page of a listing to its end: the batches in the order listed, and the pages' sizes.
async function listAll(secret: string, query: string) {
	const listed: [string, any][] = [];
	const sizes: number[] = [];
	let cursor: string | null = null;
	do {
		const res = await list(secret, `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		listed.push(...Object.entries<any>(res.body.batches));
		sizes.push(Object.keys(res.body.batches).length);
		cursor = res.body.cursor;
	} while (cursor !== null);
	return { listed, sizes };
}

// Newest first: created_ts, then uuid, both descending.
const newestFirst = (a: [string, any], b: [string, any]) =>
	b[1].created_ts - a[1].created_ts || (b[0] < a[0] ? -1 : b[0] > a[0] ? 1 : 0);

describe("get_batches", () => {
	it("lists the caller's batches newest first, of one status or several, page by page to a null cursor", async () => {
		const admin = await bootstrap();
		const done = await completedBatch(admin.secret);
		const ended = await endedBatches(admin.secret, 4);
		const { listed, sizes } = await listAll(admin.secret, "count=2");
		expect(sizes).toEqual([2, 2, 1]);
		expect(listed.map(([uuid]) => uuid).sort()).toEqual([done.batch, ...ended].sort());
		expect([...listed].sort(newestFirst)).toEqual(listed);
		// Each entry is the batch's record's summary, as get_batch answers it.
		for (const [uuid, entry] of listed) {
			const got = await call("GET", `/batches/${uuid}`, { secret: admin.secret });
			const { status, operation, user, created_ts, updated_ts } = got.body;
			expect(entry).toEqual({ status, operation, user, created_ts, updated_ts });
		}
		const one = await list(admin.secret, "status=completed");
		expect(one.status).toBe(200);
		expect(Object.keys(one.body.batches)).toEqual([done.batch]);
		expect(one.body.cursor).toBeNull();
		const several = await listAll(admin.secret, "status=hash_mismatch,completed&count=100");
		expect(several.listed.map(([uuid]) => uuid)).toEqual(listed.map(([uuid]) => uuid));
		const mismatched = await listAll(admin.secret, "status=hash_mismatch");
		expect(mismatched.listed.map(([uuid]) => uuid)).toEqual(
			listed.map(([uuid]) => uuid).filter((u) => u !== done.batch),
		);
		expect(await list(admin.secret, "status=new")).toMatchObject({ status: 200, body: { cursor: null, batches: {} } });
	});

	it("answers a page with fewer than count while more follow, its cursor not null", async () => {
		const admin = await bootstrap();
		const done = await completedBatch(admin.secret);
		// Newer than the completed batch, more of other statuses than a page looks past.
		await endedBatches(admin.secret, 11);
		const first = await list(admin.secret, "status=completed&count=1");
		expect(first.status).toBe(200);
		expect(first.body.batches).toEqual({});
		expect(first.body.cursor).not.toBeNull();
		const second = await list(admin.secret, `status=completed&count=1&cursor=${encodeURIComponent(first.body.cursor)}`);
		expect(second.status).toBe(200);
		expect(Object.keys(second.body.batches)).toEqual([done.batch]);
		expect(second.body.cursor).toBeNull();
	});

	it("pages 100 batches at a time by default", async () => {
		const admin = await bootstrap();
		const ended = await endedBatches(admin.secret, 101);
		const first = await list(admin.secret);
		expect(first.status).toBe(200);
		expect(Object.keys(first.body.batches)).toHaveLength(100);
		expect(first.body.cursor).not.toBeNull();
		const rest = await list(admin.secret, `cursor=${encodeURIComponent(first.body.cursor)}`);
		expect(Object.keys(rest.body.batches)).toHaveLength(1);
		expect(rest.body.cursor).toBeNull();
		expect([...Object.keys(first.body.batches), ...Object.keys(rest.body.batches)].sort()).toEqual([...ended].sort());
	});

	it("refuses a count out of 1..100, an unknown status and any other parameter with 400101", async () => {
		const admin = await bootstrap();
		for (const query of [
			"count=0",
			"count=101",
			"count=1.5",
			"count=ten",
			"status=bogus",
			"status=",
			"status=new,bogus",
			"order=asc",
			"user=x",
		]) {
			expectError(await list(admin.secret, query), 400, 400101);
		}
		for (const query of ["count=1", "count=100", "status=new,completed"])
			expect((await list(admin.secret, query)).status).toBe(200);
	});

	it("refuses a cursor that is not its request's with 400104: undecodable, another user's, another filter's, an export list's", async () => {
		const admin = await bootstrap();
		await holdJobs(admin.account);
		const other = await plainUser(admin);
		await endedBatches(admin.secret, 2);
		await endedBatches(other.secret, 2);
		const cursorOf = async (secret: string, path: string) => {
			const res = await call("GET", path, { secret });
			expect(res.status).toBe(200);
			expect(res.body.cursor).not.toBeNull();
			return encodeURIComponent(res.body.cursor as string);
		};
		const mine = await cursorOf(admin.secret, "/batches?count=1");
		const theirs = await cursorOf(other.secret, "/batches?count=1");
		const filtered = await cursorOf(admin.secret, "/batches?count=1&status=hash_mismatch");
		for (let i = 0; i < 2; i++)
			expect((await call("POST", "/exports", { secret: admin.secret, body: {} })).status).toBe(201);
		const exports = await cursorOf(admin.secret, "/exports?count=1");
		// Each works in its own request.
		expect((await list(admin.secret, `count=1&cursor=${mine}`)).status).toBe(200);
		expect((await list(other.secret, `count=1&cursor=${theirs}`)).status).toBe(200);
		expect((await list(admin.secret, `count=1&status=hash_mismatch&cursor=${filtered}`)).status).toBe(200);
		const stranger = await bootstrap();
		for (const [secret, query] of [
			[admin.secret, "cursor=not-a-cursor"],
			[admin.secret, `cursor=${mine.slice(0, -4)}`],
			[admin.secret, `cursor=${theirs}`],
			[other.secret, `cursor=${mine}`],
			[admin.secret, `status=hash_mismatch&cursor=${mine}`],
			[admin.secret, `status=completed&cursor=${filtered}`],
			[admin.secret, `cursor=${filtered}`],
			[admin.secret, `cursor=${exports}`],
			[stranger.secret, `cursor=${mine}`],
		] as const) {
			expectError(await list(secret, query), 400, 400104);
		}
	});
});

describe("a batch's owner", () => {
	it("is its creator: another user gets 404102 as for an absent batch and does not list it; the administrator lists, reads, cancels and deletes it", async () => {
		const admin = await bootstrap();
		await holdJobs(admin.account);
		const [creator, other] = [await plainUser(admin), await plainUser(admin)];
		const theirs = (await fileBatch(creator.secret, "create_twin", [{}])).batch;
		const own = (await fileBatch(admin.secret, "create_twin", [{}])).batch;
		const absent = idOf(admin.account);
		const routes = [
			["GET", undefined],
			["PATCH", { status: "cancel" }],
			["DELETE", undefined],
		] as const;
		for (const [method, body] of routes) {
			const hidden = await call(method, `/batches/${theirs}`, { secret: other.secret, body });
			expectError(hidden, 404, 404102);
			const missing = await call(method, `/batches/${absent}`, { secret: other.secret, body });
			expect(fingerprint(hidden)).toEqual(fingerprint(missing));
		}
		expect((await list(other.secret)).body).toEqual({ cursor: null, batches: {} });
		// The creator lists its own only; the administrator every user's.
		expect(Object.keys((await list(creator.secret)).body.batches)).toEqual([theirs]);
		const all = (await list(admin.secret)).body.batches;
		expect(Object.keys(all).sort()).toEqual([theirs, own].sort());
		expect(all[theirs].user).toBe(creator.user);
		expect(all[own].user).toBe(admin.user);
		expectError(await call("GET", `/batches/${own}`, { secret: creator.secret }), 404, 404102);

		const read = await call("GET", `/batches/${theirs}`, { secret: admin.secret });
		expect(read.status).toBe(200);
		expect(read.body).toMatchObject({ batch: theirs, user: creator.user, status: "new" });
		const cancelled = await call("PATCH", `/batches/${theirs}`, { secret: admin.secret, body: { status: "cancel" } });
		expect(cancelled.status).toBe(200);
		expect(cancelled.body.status).toBe("cancel");
		const ended = await runJob(creator.secret, `/batches/${theirs}`);
		expect(ended.status).toBe("cancelled");
		const deleted = await call("DELETE", `/batches/${theirs}`, { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body).toMatchObject({ batch: theirs, status: "deleting" });
		expectError(await call("GET", `/batches/${theirs}`, { secret: creator.secret }), 404, 404102);
		expect((await list(creator.secret)).body.batches).toEqual({});
	});

	it("answers another account's batch, and a path that is no uuid, exactly as an absent one on every route", async () => {
		const owner = await bootstrap();
		await holdJobs(owner.account);
		const stranger = await bootstrap();
		const foreign = (await fileBatch(owner.secret, "create_twin", [{}])).batch;
		const absent = idOf(stranger.account);
		for (const [method, body] of [
			["GET", undefined],
			["PATCH", { status: "cancel" }],
			["DELETE", undefined],
		] as const) {
			const missing = await call(method, `/batches/${absent}`, { secret: stranger.secret, body });
			expectError(missing, 404, 404102);
			for (const path of [foreign, "not-a-uuid", absent.toUpperCase()]) {
				const res = await call(method, `/batches/${path}`, { secret: stranger.secret, body });
				expect(fingerprint(res), `${method} ${path}`).toEqual(fingerprint(missing));
			}
		}
		// Untouched: the owner's batch was neither cancelled nor deleted.
		const mine = await call("GET", `/batches/${foreign}`, { secret: owner.secret });
		expect(mine.body.status).toBe("new");
	});
});

describe("get_batch", () => {
	it("answers the results URL valid until validity_ts: an hour by default, at most 7 days ahead, nothing else", async () => {
		const admin = await bootstrap();
		const done = await completedBatch(admin.secret);
		const path = `/batches/${done.batch}`;
		const before = seconds();
		const plain = await call("GET", path, { secret: admin.secret });
		const after = seconds();
		expect(plain.body.results.validity_ts).toBeGreaterThanOrEqual(Math.floor((before + 3600) * 1000) / 1000);
		expect(plain.body.results.validity_ts).toBeLessThanOrEqual(after + 3600);
		const asked = Math.floor(seconds()) + 600;
		const chosen = await call("GET", `${path}?validity_ts=${asked}`, { secret: admin.secret });
		expect(chosen.status).toBe(200);
		expect(chosen.body.results.validity_ts).toBe(asked);
		expect(await resultsOf(chosen.body.results.url)).toHaveLength(1);
		const week = Math.floor(seconds()) + 604_800 - 60;
		expect((await call("GET", `${path}?validity_ts=${week}`, { secret: admin.secret })).body.results.validity_ts).toBe(
			week,
		);
		for (const query of [
			`validity_ts=${Math.floor(seconds()) + 604_800 + 60}`,
			`validity_ts=${Math.floor(seconds()) - 60}`,
			"validity_ts=soon",
			"download=true",
			`validity_ts=${asked}&extra=1`,
		]) {
			expectError(await call("GET", `${path}?${query}`, { secret: admin.secret }), 400, 400101);
		}
	});

	it("never answers a results URL valid past the batch's expires_ts", async () => {
		const admin = await bootstrap();
		await holdJobs(admin.account);
		const made = await fileBatch(admin.secret, "create_twin", [{}]);
		await runJob(admin.secret, `/batches/${made.batch}`, ["processed"]);
		// Kept two minutes once ended, not a week.
		await jobEnv(made.batch, { BATCH_RETENTION_SECONDS: 120 });
		const done = await runJob(admin.secret, `/batches/${made.batch}`);
		expect(done.status).toBe("completed");
		expect(done.expires_ts).toBeLessThan(seconds() + 121);
		expect(done.results.validity_ts).toBe(done.expires_ts);
		const asked = Math.floor(seconds()) + 3600;
		const got = await call("GET", `/batches/${made.batch}?validity_ts=${asked}`, { secret: admin.secret });
		expect(got.body.results.validity_ts).toBe(done.expires_ts);
	});
});

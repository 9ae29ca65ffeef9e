import { afterEach, describe, expect, it, vi } from "vitest";
import { idOf } from "../support/shards";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";

const STRONG = /^"[^"]+"$/;
const get = (secret: string, twin: string) => call("GET", `/twins/${twin}`, { secret });
const update = (
	secret: string,
	twin: string,
	description: Record<string, unknown>,
	headers: Record<string, string> = {},
) => call("PATCH", `/twins/${twin}`, { secret, body: { description }, headers });
const terminate = (secret: string, twin: string, headers: Record<string, string> = {}) =>
	call("DELETE", `/twins/${twin}`, { secret, headers });

afterEach(() => {
	vi.restoreAllMocks();
});

describe("ETags of twins", () => {
	it("are strong, answered by create, get, update and terminate, and new after every write that changes the twin", async () => {
		const admin = await bootstrap();
		const created = await call("POST", "/twins", { secret: admin.secret, body: { description: { a: 1 } } });
		const twin = created.body.uuid;
		const tags = [created.headers.get("etag")];
		tags.push((await get(admin.secret, twin)).headers.get("etag"));
		tags.push((await update(admin.secret, twin, { a: 2 })).headers.get("etag"));
		tags.push((await get(admin.secret, twin)).headers.get("etag"));
		tags.push((await terminate(admin.secret, twin)).headers.get("etag"));
		for (const tag of tags) expect(tag).toMatch(STRONG);
		expect(tags[1]).toBe(tags[0]);
		expect(tags[3]).toBe(tags[2]);
		expect(new Set([tags[0], tags[2], tags[4]]).size).toBe(3);
		expect((await get(admin.secret, twin)).headers.get("etag")).toBe(tags[4]);
	});

	it("differ after two writes in the same millisecond", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 0 });
		vi.spyOn(Date, "now").mockReturnValue(1_800_000_000_000);
		const first = await update(admin.secret, twin, { a: 1 });
		const second = await update(admin.secret, twin, { a: 2 });
		expect(second.body.updated_ts).toBe(first.body.updated_ts);
		expect(second.headers.get("etag")).not.toBe(first.headers.get("etag"));
	});

	it("stay as they are after a write that changes nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1 });
		const tag = (await get(admin.secret, twin)).headers.get("etag");
		expect(tag).toMatch(STRONG);
		const same = await call("PATCH", `/twins/${twin}`, {
			secret: admin.secret,
			body: { description: { a: 1, b: null } },
			headers: { "content-type": "application/merge-patch+json" },
		});
		expect(same.headers.get("etag")).toBe(tag);
		expect((await update(admin.secret, twin, { a: 1 })).headers.get("etag")).toBe(tag);
	});
});

describe("If-Match on update_twin and terminate_twin", () => {
	it("writes when it names the current ETag, * or a list holding it", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 0 });
		let tag = (await get(admin.secret, twin)).headers.get("etag")!;
		expect(tag).toMatch(STRONG);
		for (const [a, header] of [
			[1, (t: string) => t],
			[2, () => "*"],
			[3, (t: string) => `W/"x", "y",, ${t}`],
		] as const) {
			const res = await update(admin.secret, twin, { a }, { "if-match": header(tag) });
			expect(res.status, header(tag)).toBe(200);
			tag = res.headers.get("etag")!;
		}
		expect((await terminate(admin.secret, twin, { "if-match": tag })).body.status).toBe("terminated");
	});

	it("answers 412251 with the current ETag, writing nothing, to a stale tag, its weak form or another twin's", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 0 });
		const other = await newTwin(admin.secret);
		const stale = (await get(admin.secret, twin)).headers.get("etag")!;
		const current = (await update(admin.secret, twin, { a: 1 })).headers.get("etag")!;
		const foreign = (await get(admin.secret, other)).headers.get("etag")!;
		for (const header of [stale, `W/${current}`, foreign, `${stale}, ${foreign}`]) {
			for (const res of [
				await update(admin.secret, twin, { a: 9 }, { "if-match": header }),
				await terminate(admin.secret, twin, { "if-match": header }),
			]) {
				expectError(res, 412, 412251);
				expect(res.headers.get("etag")).toBe(current);
			}
		}
		const stored = await get(admin.secret, twin);
		expect(stored.body).toMatchObject({ status: "alive", description: { a: 1 } });
		expect(stored.headers.get("etag")).toBe(current);
	});

	it("lets one of two writes sent with the same ETag through", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 0 });
		const tag = (await get(admin.secret, twin)).headers.get("etag")!;
		const answers = await Promise.all([1, 2, 3, 4].map((a) => update(admin.secret, twin, { a }, { "if-match": tag })));
		expect(answers.map((res) => res.status).sort()).toEqual([200, 412, 412, 412]);
	});

	it("refuses a malformed If-Match with 400101 naming the header", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const header of ["abc", '"a" "b"', '*, "a"', 'W/ "a"', ",", '"a\\"b"']) {
			for (const res of [
				await update(admin.secret, twin, {}, { "if-match": header }),
				await terminate(admin.secret, twin, { "if-match": header }),
			]) {
				expectError(res, 400, 400101);
				expect(res.body.details[0].path).toBe("If-Match");
			}
		}
		expect((await get(admin.secret, twin)).body.status).toBe("alive");
	});

	it("keeps 403103 and 400103 before it: only a twin the caller may write answers 412", async () => {
		const owner = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(owner.secret, { open: true });
		const viewer = await userWithRules(other, { twin: "TWIN.open == true" });
		const stale = '"no-such-tag"';
		expectError(await update(owner.secret, twin, {}, { "if-match": stale }), 412, 412251);
		expectError(await update(viewer.secret, twin, {}, { "if-match": stale }), 403, 403103);
		expectError(await terminate(viewer.secret, twin, { "if-match": stale }), 403, 403103);
		expect((await terminate(owner.secret, twin)).status).toBe(200);
		expectError(await update(owner.secret, twin, {}, { "if-match": stale }), 400, 400103);
		expectError(await terminate(owner.secret, twin, { "if-match": stale }), 400, 400103);
	});

	it("answers a twin the caller cannot see exactly as an absent one, whatever If-Match holds", async () => {
		const owner = await bootstrap();
		const twin = await newTwin(owner.secret, { open: false });
		const tag = (await get(owner.secret, twin)).headers.get("etag")!;
		const stranger = await bootstrap();
		const sameAccount = await userWithRules(owner, { twin: "TWIN.open == true" });
		const absent = idOf(twin);
		const swap = (text: string) => text.replaceAll(twin, absent);
		for (const secret of [stranger.secret, sameAccount.secret]) {
			for (const header of [tag, "*", '"stale"', 'W/"weak"', "not a tag"]) {
				const sends = [
					(uuid: string) =>
						call("PATCH", `/twins/${uuid}`, {
							secret,
							body: { description: { a: 1 } },
							headers: { "if-match": header },
						}),
					(uuid: string) => call("DELETE", `/twins/${uuid}`, { secret, headers: { "if-match": header } }),
				];
				for (const send of sends) {
					const hidden = await send(twin);
					expectError(hidden, 404, 404102);
					expect(fingerprint(hidden, swap)).toEqual(fingerprint(await send(absent)));
				}
			}
		}
		// The owner, who may write it, is held to the same headers.
		expectError(
			await call("DELETE", `/twins/${twin}`, { secret: owner.secret, headers: { "if-match": '"stale"' } }),
			412,
			412251,
		);
		expect((await get(owner.secret, twin)).headers.get("etag")).toBe(tag);
	});
});

describe("ETags and Idempotency-Key", () => {
	it("replays the kept answer's ETag, and keeps no answer a failed precondition decided", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 0 });
		const stale = (await get(admin.secret, twin)).headers.get("etag")!;
		const first = await update(admin.secret, twin, { a: 1 }, { "idempotency-key": "write-a-1" });
		const again = await update(admin.secret, twin, { a: 1 }, { "idempotency-key": "write-a-1" });
		expect(again.headers.get("idempotent-replayed")).toBe("true");
		expect(again.headers.get("etag")).toBe(first.headers.get("etag"));
		// A 412 is not kept: the same request runs again, and answers the ETag of the moment.
		const refused = await update(admin.secret, twin, { a: 2 }, { "idempotency-key": "write-a-2", "if-match": stale });
		expectError(refused, 412, 412251);
		await update(admin.secret, twin, { a: 3 });
		const retried = await update(admin.secret, twin, { a: 2 }, { "idempotency-key": "write-a-2", "if-match": stale });
		expectError(retried, 412, 412251);
		expect(retried.headers.get("idempotent-replayed")).toBeNull();
		expect(retried.headers.get("etag")).not.toBe(refused.headers.get("etag"));
	});
});

import { describe, expect, it } from "vitest";
import { bootstrap, userWith } from "../support/accounts";
import { call, expectError } from "../support/requests";
import { dbOf } from "../support/shards";
import { seedTwins } from "../support/twins";
import { fileBatch, resultsOf, runJob, twinCount, uploadedText } from "./helpers";

describe("a file batch", () => {
	it("runs every line once, in order, and answers each line's result behind a URL", async () => {
		const admin = await bootstrap();
		const lines = Array.from({ length: 5 }, (_, i) => ({ body: { description: { n: i } } }));
		const made = await fileBatch(admin.secret, "create_twin", lines, { description: { purpose: "onboarding" } });
		expect(made.status).toBe("new");
		expect(made.hash).toMatch(/^[0-9a-f]{64}$/);
		const done = await runJob(admin.secret, `/batches/${made.batch}`);
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 5, done: 5, succeeded: 5, failed: 0 });
		expect(done.description).toEqual({ purpose: "onboarding" });
		expect(done.expires_ts).toBeGreaterThan(done.updated_ts);
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => [r.line, r.status, r.body.description.n])).toEqual(lines.map((_, i) => [i + 1, 201, i]));
		expect(await twinCount(dbOf(admin.account), admin.account)).toBe(5);
	});

	it("runs a file of many short lines over several steps, each line once and in order", async () => {
		const admin = await bootstrap();
		// 250 lines in one window of the input: the steps after the first run on from it.
		const lines = Array.from({ length: 250 }, (_, i) => ({ body: { description: { n: i } } }));
		const made = await fileBatch(admin.secret, "create_twin", lines);
		const done = await runJob(admin.secret, `/batches/${made.batch}`);
		expect(done.progress).toEqual({ lines: 250, done: 250, succeeded: 250, failed: 0 });
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => [r.line, r.body.description.n])).toEqual(lines.map((_, i) => [i + 1, i]));
		expect(await twinCount(dbOf(admin.account), admin.account)).toBe(250);
	});

	it("reports a line's refusal as its result and runs the next", async () => {
		const admin = await bootstrap();
		const twin = "01234567-89ab-8def-8123-456789abcdef";
		const made = await fileBatch(admin.secret, "update_twin", [{ params: { twin }, body: { description: { a: 1 } } }]);
		const done = await runJob(admin.secret, `/batches/${made.batch}`);
		expect(done.progress).toEqual({ lines: 1, done: 1, succeeded: 0, failed: 1 });
		const [result] = await resultsOf(done.results.url);
		expect(result).toMatchObject({
			line: 1,
			status: 404,
			subcode: 404102,
			body: { subcode: 404102, code: "not_found" },
		});
	});

	it("fails validation as a whole, naming each line and field, and runs nothing", async () => {
		const admin = await bootstrap();
		const text = [
			JSON.stringify({ body: { description: { ok: 1 } } }),
			"",
			"not json",
			JSON.stringify({ body: { description: { "Bad-Key": 1 } } }),
			JSON.stringify({ bogus: 1 }),
			JSON.stringify({ params: { twin: "x" } }),
		].join("\n");
		const upload = await uploadedText(admin.secret, `${text}\n`);
		const res = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "create_twin", handler: upload.handler },
		});
		expect(res.status).toBe(201);
		const failed = await runJob(admin.secret, `/batches/${res.body.batch}`);
		expect(failed.status).toBe("validation_failed");
		expect(failed.progress.lines).toBeNull();
		expect(failed.errors.map((e: any) => [e.line, e.path])).toEqual([
			[2, ""],
			[3, ""],
			[4, "body.description.Bad-Key"],
			[5, "bogus"],
			[6, "params.twin"],
		]);
		expect(failed.results).toBeUndefined();
		expect(await twinCount(dbOf(admin.account), admin.account)).toBe(0);
	});

	it("is made hash_mismatch when the hash differs, keeping the upload for a retry", async () => {
		const admin = await bootstrap();
		const upload = await uploadedText(admin.secret, `${JSON.stringify({})}\n`);
		const wrong = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "create_twin", handler: upload.handler, hash: "0".repeat(64) },
		});
		expect(wrong.status).toBe(201);
		expect(wrong.body.status).toBe("hash_mismatch");
		expect(wrong.body.expires_ts).not.toBeNull();
		const right = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "create_twin", handler: upload.handler, hash: upload.hash.toUpperCase() },
		});
		expect(right.status).toBe(201);
		expect(right.body.status).toBe("new");
		const done = await runJob(admin.secret, `/batches/${right.body.batch}`);
		expect(done.progress.succeeded).toBe(1);
	});

	it("refuses in the contract's order, consuming nothing", async () => {
		const admin = await bootstrap();
		const upload = await uploadedText(admin.secret, "{}\n");
		const create = (secret: string, body: Record<string, unknown>) => call("POST", "/batches", { secret, body });
		expectError(await create(admin.secret, { operation: "create_user", handler: upload.handler }), 400, 400101);
		expectError(await create(admin.secret, { operation: "create_twin" }), 400, 400101);
		const narrow = await userWith(admin, { effect: "allow", actions: ["create_batch", "create_upload_url"] });
		const own = await uploadedText(narrow.secret, "{}\n");
		expectError(await create(narrow.secret, { operation: "create_twin", handler: own.handler }), 403, 403101);
		expectError(await create(admin.secret, { operation: "create_twin", handler: own.handler }), 404, 404171);
		const empty = await call("POST", "/cache", { secret: admin.secret });
		expectError(await create(admin.secret, { operation: "create_twin", handler: empty.body.handler }), 409, 409171);
		// Nothing was consumed: the upload still makes a batch.
		const made = await create(admin.secret, { operation: "create_twin", handler: upload.handler });
		expect(made.status).toBe(201);
	});

	it("keeps MAX_ACTIVE_BATCHES jobs running at once", async () => {
		const admin = await bootstrap();
		for (let i = 0; i < 3; i++) await fileBatch(admin.secret, "create_twin", [{}]);
		const upload = await uploadedText(admin.secret, "{}\n");
		const fourth = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "create_twin", handler: upload.handler },
		});
		expectError(fourth, 409, 409231);
	});
});

describe("a job whose own input is refused while it runs", () => {
	// About 3,000 instructions over 30,000 characters: one twin alone needs more work than a
	// request may spend (as test/scan/bounds.test.ts). Tried again, it would be refused again.
	const RULE = "TWIN.s =~ '(?:[ab][ab]?){999}[cd]'";

	it("stops a match batch with that refusal, runs nothing, and ends cancelled", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [{ s: "ab".repeat(15_000) }]);
		const made = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "update_twin", twins: { match: RULE }, template: { body: { description: { x: 1 } } } },
		});
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		const done = await runJob(admin.secret, `/batches/${made.body.batch}`);
		expect(done.status).toBe("cancelled");
		expect(done.stopped).toMatchObject({ subcode: 400101, description: expect.stringContaining("more work") });
		expect(done.progress).toEqual({ lines: null, done: 0, succeeded: 0, failed: 0 });
		expect(await resultsOf(done.results.url)).toEqual([]);
	});

	it("stops an export with that refusal, keeping no file", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [{ s: "ab".repeat(15_000) }]);
		const made = await call("POST", "/exports", { secret: admin.secret, body: { match: RULE } });
		expect(made.status, JSON.stringify(made.body)).toBe(201);
		const done = await runJob(admin.secret, `/exports/${made.body.export}`);
		expect(done.status).toBe("cancelled");
		expect(done.stopped).toMatchObject({ subcode: 400101 });
		expect(done.files).toBeUndefined();
	});
});

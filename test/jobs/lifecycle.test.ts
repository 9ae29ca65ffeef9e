// A batch from its making to its removal (docs/batches.md): cancel and delete, the creator read
// again before every step, exactly once across a restart, retries of a line answering 5xx, the
// bounds, match batches, expiry, and statuses that only move forward. Where a test looks at a
// job part way, its account's jobs are held (helpers.ts `holdJobs`): they step only when the
// test steps them.
import { createExecutionContext, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { now } from "../../src/base/time";
import { creatorNow } from "../../src/jobs/creator";
import { runLine } from "../../src/jobs/line";
import { type Account, bootstrap, userWith, userWithRules } from "../support/accounts";
import { failingWrites, loggedErrors } from "../support/faults";
import { inImplementation, objectEnv } from "../support/objects";
import type { Outcome } from "../../src/account/outcome";
import type { JobAnswer } from "../../src/db/job-records";
import type { BatchState } from "../../src/jobs/store";
import { call, expectError } from "../support/requests";
import { bindingOf, dbOf, idOf } from "../support/shards";
import { newTwin } from "../support/twins";
import { download, uploadObject } from "../docs/helpers";
import {
	beforeLineWrites,
	changeStoredState,
	fileBatch,
	holdJobs,
	jobEnv,
	ndjson,
	plainUser,
	resultsOf,
	runJob,
	stepJob,
	storedState,
	twinCount,
	uploadedText,
} from "./helpers";

const path = (batch: string) => `/batches/${batch}`;
const get = async (secret: string, batch: string) => {
	const res = await call("GET", path(batch), { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body;
};
const cancel = (secret: string, batch: string, body: unknown = { status: "cancel" }) =>
	call("PATCH", path(batch), { secret, body });

const twinsOf = (account: Account) => twinCount(dbOf(account.account), account.account);
const creates = (n: number) => Array.from({ length: n }, (_, i) => ({ body: { description: { n: i + 1 } } }));

// An account whose jobs step only when the test steps them.
async function heldAccount() {
	const admin = await bootstrap();
	await holdJobs(admin.account);
	return admin;
}

async function lineMarks(job: string): Promise<number> {
	const row = await dbOf(job)
		.prepare("SELECT count(*) AS n FROM job_lines WHERE job = ?")
		.bind(job)
		.first<{ n: number }>();
	return row!.n;
}

// The job's steps until its object has forgotten it (its alarm no longer set).
async function stepToTheEnd(job: string) {
	for (let step = 0; step < 50; step++) if (!(await stepJob(job))) return;
	throw new Error(`${job} still has steps after 50`);
}

// When the job's next step is due, in ms from now.
async function nextStepIn(job: string): Promise<number> {
	const due = await runInDurableObject(env.BATCHES.getByName(job), (_instance: unknown, state: DurableObjectState) =>
		state.storage.sql.exec<{ due_ms: number }>("SELECT due_ms FROM timers WHERE name = 'step'").one(),
	);
	return due.due_ms - Date.now();
}

const withoutTrace = ({ trace: _, ...rest }: Record<string, unknown>) => rest;

describe("update_batch", () => {
	it("takes exactly {status: cancel}, else 400101 and the batch unchanged", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(1));
		for (const body of [
			{},
			{ status: "cancelled" },
			{ status: "CANCEL" },
			{ status: "cancel", force: true },
			// A JSON string, not an object (call sends a string body as it is).
			'"cancel"',
			[],
		]) {
			expectError(await cancel(admin.secret, made.batch, body), 400, 400101);
		}
		expect((await get(admin.secret, made.batch)).status).toBe("new");
		expect((await storedState(made.batch))!.cancelAsked).toBe(false);
	});

	it("cancels a batch not ended, changes nothing when asked again, and refuses an ended one with 409232", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(2));
		const first = await cancel(admin.secret, made.batch);
		expect(first.status).toBe(200);
		expect(first.body).toMatchObject({
			batch: made.batch,
			status: "cancel",
			operation: "create_twin",
			user: admin.user,
		});
		expect(first.body.results).toBeUndefined();
		const again = await cancel(admin.secret, made.batch);
		expect(again.status).toBe(200);
		expect(again.body).toEqual(first.body);
		await stepJob(made.batch);
		expect((await get(admin.secret, made.batch)).status).toBe("cancelling");
		const cancelling = await cancel(admin.secret, made.batch);
		expect(cancelling.status).toBe(200);
		expect(cancelling.body.status).toBe("cancelling");
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("cancelled");
		expect(done.progress).toEqual({ lines: null, done: 0, succeeded: 0, failed: 0 });
		expect(await resultsOf(done.results.url)).toEqual([]);
		expect(await twinsOf(admin)).toBe(0);
		expectError(await cancel(admin.secret, made.batch), 409, 409232);
		const mismatch = await call("POST", "/batches", {
			secret: admin.secret,
			body: {
				operation: "create_twin",
				handler: (await uploadedText(admin.secret, "{}\n")).handler,
				hash: "0".repeat(64),
			},
		});
		expect(mismatch.body.status).toBe("hash_mismatch");
		expectError(await cancel(admin.secret, mismatch.body.batch), 409, 409232);
	});

	it("takes effect between two lines: the line in flight finishes, lines done stay done, the results hold those run", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(6));
		await runJob(admin.secret, path(made.batch), ["processing"]);
		// Line 3's write waits, before it commits, for a cancel: the object's own, as update_batch
		// calls it, asked from inside the step (a request from the test could not reach into it).
		type Cancellable = { env: Env; cancel(): Promise<Outcome<JobAnswer>> };
		let asked: Outcome<JobAnswer> | undefined;
		const binding = bindingOf(admin.account) as "DB_0";
		await inImplementation(env.BATCHES.getByName(made.batch) as never, (instance: unknown) => {
			const job = instance as Cancellable;
			job.env = {
				...job.env,
				[binding]: beforeLineWrites(job.env[binding], async (_job, line) => {
					if (line === 3) asked = await job.cancel();
				}),
			};
		});
		await stepJob(made.batch);
		expect(asked).toMatchObject({ ok: true, value: { status: "cancel" } });
		expect((await get(admin.secret, made.batch)).status).toBe("cancelling");
		expect((await cancel(admin.secret, made.batch)).body.status).toBe("cancelling");
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("cancelled");
		expect(done.progress).toEqual({ lines: 6, done: 3, succeeded: 3, failed: 0 });
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => [r.line, r.status, r.body.description.n])).toEqual([
			[1, 201, 1],
			[2, 201, 2],
			[3, 201, 3],
		]);
		expect(await twinsOf(admin)).toBe(3);
	});
});

describe("delete_batch", () => {
	it("refuses a batch not ended with 409232", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(1));
		expectError(await call("DELETE", path(made.batch), { secret: admin.secret }), 409, 409232);
		await cancel(admin.secret, made.batch);
		expectError(await call("DELETE", path(made.batch), { secret: admin.secret }), 409, 409232);
		expect((await get(admin.secret, made.batch)).status).toBe("cancel");
	});

	it("removes an ended batch at once for every route, then its input, results and line marks in the background", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(3));
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("completed");
		const input = (await storedState(made.batch))!.spec.input!;
		const results = `jobs/${made.batch}/results`;
		expect(await env.DOCS.head(input)).not.toBeNull();
		expect(await env.DOCS.head(results)).not.toBeNull();
		expect(await lineMarks(made.batch)).toBe(3);

		const deleted = await call("DELETE", path(made.batch), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		const { results: _, status: __, ...kept } = done;
		expect(deleted.body).toEqual({ ...kept, status: "deleting", updated_ts: deleted.body.updated_ts });
		expect(deleted.body.results).toBeUndefined();
		for (const [method, body] of [
			["GET", undefined],
			["PATCH", { status: "cancel" }],
			["DELETE", undefined],
		] as const) {
			expectError(await call(method, path(made.batch), { secret: admin.secret, body }), 404, 404102);
		}
		expect((await call("GET", "/batches", { secret: admin.secret })).body.batches).toEqual({});
		expectError(await download(done.results.url), 404, 404171);

		await stepToTheEnd(made.batch);
		expect(await env.DOCS.head(input)).toBeNull();
		expect(await env.DOCS.head(results)).toBeNull();
		expect(await lineMarks(made.batch)).toBe(0);
		expect(await storedState(made.batch)).toBeUndefined();
		// The twins its lines made stay.
		expect(await twinsOf(admin)).toBe(3);
	});

	it("is what an ended batch's expiry does", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(2));
		const done = await runJob(admin.secret, path(made.batch));
		const input = (await storedState(made.batch))!.spec.input!;
		// Not yet due: a step changes nothing.
		await stepJob(made.batch);
		expect((await get(admin.secret, made.batch)).status).toBe("completed");
		await changeStoredState(made.batch, (state) => {
			state.expires_ts = now() - 1;
		});
		await stepJob(made.batch);
		expectError(await call("GET", path(made.batch), { secret: admin.secret }), 404, 404102);
		expect((await call("GET", "/batches", { secret: admin.secret })).body.batches).toEqual({});
		expectError(await download(done.results.url), 404, 404171);
		await stepToTheEnd(made.batch);
		expect(await env.DOCS.head(input)).toBeNull();
		expect(await env.DOCS.head(`jobs/${made.batch}/results`)).toBeNull();
		expect(await lineMarks(made.batch)).toBe(0);
		expect(await storedState(made.batch)).toBeUndefined();
	});
});

describe("a create that fails after its job's object started", () => {
	it("leaves the upload whole: the object forgets itself without its input, and a retry runs", async () => {
		loggedErrors();
		const admin = await bootstrap();
		const started = await holdJobs(admin.account);
		const upload = await uploadedText(admin.secret, ndjson(creates(1)));
		const key = await uploadObject(upload.handler);
		const body = { operation: "create_twin", handler: upload.handler };
		// The account's object starts the job's, then fails to write its row.
		const binding = bindingOf(admin.account) as "DB_0";
		const undo = await objectEnv(admin.account, { [binding]: failingWrites(env[binding]) });
		const failed = await call("POST", "/batches", { secret: admin.secret, body });
		expect(failed.status).toBe(500);
		await undo();
		expect(started).toHaveLength(1);
		const [orphan] = started as [string];
		// No row: the object waits a while for it, then takes the create for failed.
		await stepJob(orphan);
		expect((await storedState(orphan))!.status).toBe("new");
		await changeStoredState(orphan, (state) => {
			state.spec.created_ts -= 120;
		});
		await stepToTheEnd(orphan);
		expect(await storedState(orphan)).toBeUndefined();
		expect(await uploadObject(upload.handler)).toBe(key);
		expect(await env.DOCS.head(key!)).not.toBeNull();
		const made = await call("POST", "/batches", { secret: admin.secret, body });
		expect(made.status).toBe(201);
		const done = await runJob(admin.secret, path(made.body.batch));
		expect(done.progress).toEqual({ lines: 1, done: 1, succeeded: 1, failed: 0 });
	});
});

describe("a batch's creator, read again before every step", () => {
	it("stops the batch when its secret is deleted: cancelled, stopped with 401102, the lines run kept", async () => {
		const admin = await heldAccount();
		const creator = await plainUser(admin);
		const lines = 120;
		const made = await fileBatch(creator.secret, "create_twin", creates(lines));
		await runJob(admin.secret, path(made.batch), ["processing"]);
		await stepJob(made.batch);
		const midway = await get(admin.secret, made.batch);
		expect(midway.status).toBe("processing");
		const ran = midway.progress.done;
		expect(ran).toBeGreaterThan(0);
		expect(ran).toBeLessThan(lines);
		expect((await call("DELETE", `/users/${creator.user}/secrets`, { secret: admin.secret })).status).toBe(200);
		await stepJob(made.batch);
		expect((await get(admin.secret, made.batch)).status).toBe("cancelling");
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("cancelled");
		expect(done.stopped).toEqual({ subcode: 401102, description: expect.any(String) });
		expect(done.progress).toEqual({ lines, done: ran, succeeded: ran, failed: 0 });
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => r.line)).toEqual(Array.from({ length: ran }, (_, i) => i + 1));
		expect(await twinsOf(admin)).toBe(ran);
	});

	it("stops the batch with 403101 when the creator's statement no longer allows its operation", async () => {
		const admin = await heldAccount();
		const creator = await plainUser(admin);
		const made = await fileBatch(creator.secret, "create_twin", creates(2));
		await runJob(admin.secret, path(made.batch), ["processing"]);
		const narrowed = await call("PATCH", `/roles/${creator.role}`, {
			secret: admin.secret,
			body: { statement: { effect: "deny", actions: ["create_user", "create_twin"] } },
		});
		expect(narrowed.status).toBe(200);
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("cancelled");
		expect(done.stopped).toEqual({ subcode: 403101, description: expect.any(String) });
		expect(done.progress.done).toBe(0);
		expect(await twinsOf(admin)).toBe(0);
	});

	it("only restricts the lines under a narrower twin rule: a twin it now hides answers as an absent one", async () => {
		const admin = await heldAccount();
		const [kept, hidden] = [await newTwin(admin.secret, { keep: true }), await newTwin(admin.secret, { keep: false })];
		const absent = idOf(admin.account);
		const creator = await userWithRules(admin, { twin: "true" });
		const update = (twin: string) => ({ params: { twin }, body: { description: { keep: true, touched: true } } });
		const made = await fileBatch(creator.secret, "update_twin", [update(kept), update(hidden), update(absent)]);
		await runJob(admin.secret, path(made.batch), ["processing"]);
		const narrowed = await call("PATCH", `/roles/${creator.role}`, {
			secret: admin.secret,
			body: { rules: { twin: "TWIN.keep == true" } },
		});
		expect(narrowed.status).toBe(200);
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("completed");
		expect(done.stopped).toBeUndefined();
		expect(done.progress).toEqual({ lines: 3, done: 3, succeeded: 1, failed: 2 });
		const [first, second, third] = await resultsOf(done.results.url);
		expect(first).toMatchObject({ line: 1, status: 200, body: { uuid: kept, description: { touched: true } } });
		expect(second).toMatchObject({ line: 2, status: 404, subcode: 404102 });
		expect(third).toMatchObject({ line: 3, status: 404, subcode: 404102 });
		expect(withoutTrace(second.body)).toEqual(withoutTrace(third.body));
		expect((await call("GET", `/twins/${hidden}`, { secret: admin.secret })).body.description).toEqual({ keep: false });
	});
});

describe("exactly once across a restart", () => {
	// A batch of three create_twin lines, held at processing, whose object then dies having begun
	// line 1: `committed` says whether line 1's write committed before it died.
	async function diedDuringLine1(committed: boolean) {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(3));
		await runJob(admin.secret, path(made.batch), ["processing"]);
		const state = (await storedState(made.batch))!;
		expect(state.next.line).toBe(1);
		if (committed) {
			const ctx = createExecutionContext();
			const runtime = { env, waitUntil: (promise: Promise<unknown>) => ctx.waitUntil(promise) };
			const caller = await creatorNow(env, state.spec, now());
			const line = { name: "create_twin" as const, params: {}, query: {}, body: creates(1)[0]!.body };
			const answer = await runLine(runtime, caller, line, { job: made.batch, line: 1 });
			expect("status" in answer && answer.status).toBe(201);
			expect(await twinsOf(admin)).toBe(1);
		}
		await changeStoredState(made.batch, (stored) => {
			stored.running = 1;
		});
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 3, done: 3, succeeded: 3, failed: 0 });
		expect(await twinsOf(admin)).toBe(3);
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => [r.line, r.status])).toEqual([
			[1, 201],
			[2, 201],
			[3, 201],
		]);
		return results;
	}

	it("does not run again a line whose write committed before the object died", async () => {
		// Its second run would meet the line's mark, and the failure is logged.
		loggedErrors();
		const [line1] = await diedDuringLine1(true);
		// The answer was lost with the object: the operation's success, no body.
		expect(line1.body).toBeNull();
	});

	it("runs once a line whose write never committed", async () => {
		const [line1] = await diedDuringLine1(false);
		expect(line1.body).toMatchObject({ description: { n: 1 } });
	});
});

describe("a line answering 5xx", () => {
	// A batch of three create_twin lines whose line 2's write fails its first `failures` tries.
	async function failingLine2(failures: number) {
		loggedErrors();
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(3));
		await runJob(admin.secret, path(made.batch), ["processing"]);
		let tries = 0;
		const binding = bindingOf(admin.account);
		await jobEnv(made.batch, {
			[binding]: beforeLineWrites(env[binding as "DB_0"], (_job, line) => {
				if (line !== 2) return;
				tries++;
				if (tries <= failures) throw new Error("injected fault: line 2's write fails");
			}),
		});
		// Retried after 2, 4 and 8 seconds.
		const delays: number[] = [];
		for (let step = 0; step < Math.min(failures, 3); step++) {
			await stepJob(made.batch);
			const state = (await storedState(made.batch)) as BatchState;
			expect(state.progress.done).toBe(1);
			expect(state.retries).toBe(step + 1);
			delays.push(await nextStepIn(made.batch));
		}
		for (const [i, delay] of delays.entries()) {
			expect(delay).toBeGreaterThan(2 ** (i + 1) * 1000 - 1000);
			expect(delay).toBeLessThanOrEqual(2 ** (i + 1) * 1000);
		}
		const done = await runJob(admin.secret, path(made.batch));
		return { admin, done, tries, results: await resultsOf(done.results.url) };
	}

	it("is retried up to 3 times, then recorded as its 5xx, and the next line runs", async () => {
		const { admin, done, tries, results } = await failingLine2(Number.POSITIVE_INFINITY);
		expect(tries).toBe(4);
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 3, done: 3, succeeded: 2, failed: 1 });
		expect(results.map((r) => [r.line, r.status, r.subcode])).toEqual([
			[1, 201, undefined],
			[2, 500, 500101],
			[3, 201, undefined],
		]);
		expect(results[1].body).toMatchObject({ subcode: 500101 });
		expect(await twinsOf(admin)).toBe(2);
	});

	it("succeeds on a retry, and is recorded once", async () => {
		const { admin, done, tries, results } = await failingLine2(2);
		expect(tries).toBe(3);
		expect(done.progress).toEqual({ lines: 3, done: 3, succeeded: 3, failed: 0 });
		expect(results.map((r) => [r.line, r.status])).toEqual([
			[1, 201],
			[2, 201],
			[3, 201],
		]);
		expect(await twinsOf(admin)).toBe(3);
	});
});

describe("the bounds", () => {
	it("fails a file of more than MAX_BATCH_LINES lines at the first line past it", async () => {
		const admin = await heldAccount();
		const over = await fileBatch(admin.secret, "create_twin", creates(4));
		await jobEnv(over.batch, { MAX_BATCH_LINES: 3 });
		const failed = await runJob(admin.secret, path(over.batch));
		expect(failed.status).toBe("validation_failed");
		expect(failed.errors).toEqual([{ line: 4, path: "", message: expect.any(String) }]);
		expect(failed.progress.lines).toBeNull();
		expect(failed.results).toBeUndefined();
		const at = await fileBatch(admin.secret, "create_twin", creates(3));
		await jobEnv(at.batch, { MAX_BATCH_LINES: 3 });
		expect((await runJob(admin.secret, path(at.batch))).status).toBe("completed");
		expect(await twinsOf(admin)).toBe(3);
	});

	it("fails a match batch selecting more than MAX_BATCH_LINES twins", async () => {
		const admin = await heldAccount();
		for (let i = 0; i < 4; i++) await newTwin(admin.secret, { i });
		const body = { operation: "update_twin", twins: { match: "true" }, template: { body: { description: { x: 1 } } } };
		const over = await call("POST", "/batches", { secret: admin.secret, body });
		expect(over.status).toBe(201);
		await jobEnv(over.body.batch, { MAX_BATCH_LINES: 3 });
		const failed = await runJob(admin.secret, path(over.body.batch));
		expect(failed.status).toBe("validation_failed");
		expect(failed.errors).toEqual([{ line: 4, path: "twins", message: expect.any(String) }]);
		const at = await call("POST", "/batches", { secret: admin.secret, body });
		await jobEnv(at.body.batch, { MAX_BATCH_LINES: 4 });
		const done = await runJob(admin.secret, path(at.body.batch));
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 4, done: 4, succeeded: 4, failed: 0 });
	});

	it("keeps the first 100 validation errors, in line order", async () => {
		const admin = await bootstrap();
		// Two errors a line: an unknown field, and params the operation does not take.
		const made = await fileBatch(
			admin.secret,
			"create_twin",
			Array.from({ length: 60 }, (_, i) => ({ params: { twin: `t${i}` }, extra: i })),
		);
		const failed = await runJob(admin.secret, path(made.batch));
		expect(failed.status).toBe("validation_failed");
		expect(failed.errors).toHaveLength(100);
		const lines = failed.errors.map((e: any) => e.line);
		expect(lines).toEqual([...lines].sort((a: number, b: number) => a - b));
		expect(lines[0]).toBe(1);
		expect(lines.at(-1)).toBe(50);
		expect(new Set(lines).size).toBe(50);
	});

	it("refuses a create past MAX_BATCHES with 409233, ended batches counted", async () => {
		const admin = await bootstrap();
		await objectEnv(admin.account, { MAX_BATCHES: 2 });
		const upload = await uploadedText(admin.secret, "{}\n");
		const create = (hash?: string) =>
			call("POST", "/batches", {
				secret: admin.secret,
				body: { operation: "create_twin", handler: upload.handler, hash },
			});
		const made = [];
		for (let i = 0; i < 2; i++) {
			const res = await create("0".repeat(64));
			expect(res.body.status).toBe("hash_mismatch");
			made.push(res.body.batch);
		}
		expectError(await create(), 409, 409233);
		expect((await call("DELETE", path(made[0]), { secret: admin.secret })).status).toBe(200);
		expect((await create()).status).toBe(201);
	});

	it("writes a results file over 5 MiB in parts, every line once and in order", async () => {
		const admin = await heldAccount();
		const twin = await newTwin(admin.secret);
		const pad = "x".repeat(30 * 1024);
		const lines = Array.from({ length: 200 }, (_, i) => ({
			params: { twin },
			body: { description: { n: i + 1, pad } },
		}));
		const made = await fileBatch(admin.secret, "update_twin", lines);
		const done = await runJob(admin.secret, path(made.batch));
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 200, done: 200, succeeded: 200, failed: 0 });
		const got = await download(done.results.url);
		expect(got.status).toBe(200);
		expect(got.bytes.length).toBeGreaterThan(5 * 1024 * 1024);
		const results = new TextDecoder()
			.decode(got.bytes)
			.trimEnd()
			.split("\n")
			.map((line) => JSON.parse(line));
		expect(results.map((r) => [r.line, r.status, r.body.description.n])).toEqual(
			lines.map((_, i) => [i + 1, 200, i + 1]),
		);
		// More than one part went up.
		expect((await storedState(made.batch))!.writing!.parts.length).toBeGreaterThan(1);
	});
});

describe("a match batch", () => {
	it("by a confined role touches only the twins it sees, each result naming its twin", async () => {
		const admin = await heldAccount();
		const shared = [
			await newTwin(admin.secret, { shared: true }),
			await newTwin(admin.secret, { shared: true }),
		].sort();
		const unseen = await newTwin(admin.secret, { shared: false });
		const confined = await userWithRules(admin, { twin: "TWIN.shared == true" });
		const res = await call("POST", "/batches", {
			secret: confined.secret,
			body: {
				operation: "update_twin",
				twins: { match: "true" },
				template: { body: { description: { shared: true, touched: true } } },
			},
		});
		expect(res.status, JSON.stringify(res.body)).toBe(201);
		expect(res.body).toMatchObject({
			twins: { match: "true" },
			template: { body: { description: { touched: true } } },
		});
		const done = await runJob(admin.secret, path(res.body.batch));
		expect(done.status).toBe("completed");
		expect(done.progress).toEqual({ lines: 2, done: 2, succeeded: 2, failed: 0 });
		const results = await resultsOf(done.results.url);
		expect(results.map((r) => [r.line, r.twin, r.status])).toEqual([
			[1, shared[0], 200],
			[2, shared[1], 200],
		]);
		for (const twin of shared)
			expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({
				shared: true,
				touched: true,
			});
		expect((await call("GET", `/twins/${unseen}`, { secret: admin.secret })).body.description).toEqual({
			shared: false,
		});
	});

	it("is refused a template naming the twin, an operation on no twin, a match that does not parse, and a statement without scan_twins", async () => {
		const admin = await heldAccount();
		const create = (secret: string, body: Record<string, unknown>) => call("POST", "/batches", { secret, body });
		const template = { body: { description: { a: 1 } } };
		const twin = idOf(admin.account);
		for (const body of [
			{ operation: "update_twin", twins: { match: "true" }, template: { ...template, params: { twin } } },
			{ operation: "create_twin", twins: { match: "true" }, template: {} },
			{ operation: "update_twin", twins: { match: "TWIN.a ==" }, template },
			{ operation: "update_twin", twins: { match: "true" } },
			{ operation: "update_twin", twins: { match: "true" }, template: { body: { description: { a: 1 }, extra: 1 } } },
		]) {
			expectError(await create(admin.secret, body), 400, 400101);
		}
		const noScan = await userWith(admin, { effect: "deny", actions: ["scan_twins"] });
		expectError(
			await create(noScan.secret, { operation: "update_twin", twins: { match: "true" }, template }),
			403,
			403101,
		);
		// The same body from a caller that may scan is a batch.
		expect((await create(admin.secret, { operation: "update_twin", twins: { match: "true" }, template })).status).toBe(
			201,
		);
		expect(Object.keys((await call("GET", "/batches", { secret: admin.secret })).body.batches)).toHaveLength(1);
	});
});

describe("a batch's create", () => {
	it("with an Idempotency-Key makes one batch when retried, replaying its answer", async () => {
		const admin = await heldAccount();
		const upload = await uploadedText(admin.secret, "{}\n");
		const send = () =>
			call("POST", "/batches", {
				secret: admin.secret,
				body: { operation: "create_twin", handler: upload.handler },
				headers: { "idempotency-key": "batch-1" },
			});
		const first = await send();
		const again = await send();
		expect(first.status).toBe(201);
		expect(again.status).toBe(201);
		expect(again.body).toEqual(first.body);
		expect(again.headers.get("idempotent-replayed")).toBe("true");
		expect(Object.keys((await call("GET", "/batches", { secret: admin.secret })).body.batches)).toEqual([
			first.body.batch,
		]);
	});
});

describe("a batch's statuses", () => {
	const FILE = ["new", "copied", "validating", "processing", "processed", "writing_results", "completed"];
	const MATCH = ["new", "validating", "processing", "processed", "writing_results", "completed"];

	// Every status and progress the batch shows, one step at a time, to its end.
	async function observed(secret: string, batch: string) {
		const seen: any[] = [];
		for (let step = 0; step < 100; step++) {
			const record = await get(secret, batch);
			seen.push(record);
			if (record.status === "completed") return seen;
			await stepJob(batch);
		}
		throw new Error(`${batch} did not complete`);
	}

	function inOrder(seen: any[], order: string[]) {
		const statuses = seen.map((record) => record.status);
		expect(statuses.filter((status, i) => status !== statuses[i - 1])).toEqual(order);
		for (const [i, record] of seen.entries()) {
			if (i === 0) continue;
			const before = seen[i - 1].progress;
			for (const counter of ["done", "succeeded", "failed"])
				expect(record.progress[counter]).toBeGreaterThanOrEqual(before[counter]);
			if (before.lines !== null) expect(record.progress.lines).toBe(before.lines);
			expect(record.updated_ts).toBeGreaterThanOrEqual(seen[i - 1].updated_ts);
		}
		const last = seen.at(-1).progress;
		expect(last.done).toBe(last.lines);
	}

	it("move forward only, through every stage of a file batch, its progress never decreasing", async () => {
		const admin = await heldAccount();
		const made = await fileBatch(admin.secret, "create_twin", creates(150));
		const seen = await observed(admin.secret, made.batch);
		inOrder(seen, FILE);
		// A step runs at most 100 lines: the progress was seen part way.
		expect(seen.some((record) => record.progress.done > 0 && record.progress.done < 150)).toBe(true);
		expect(seen.at(-1).progress).toEqual({ lines: 150, done: 150, succeeded: 150, failed: 0 });
	});

	it("move forward only through a match batch's stages", async () => {
		const admin = await heldAccount();
		for (let i = 0; i < 3; i++) await newTwin(admin.secret, { i });
		const res = await call("POST", "/batches", {
			secret: admin.secret,
			body: { operation: "update_twin", twins: { match: "true" }, template: { body: { description: { done: true } } } },
		});
		expect(res.status).toBe(201);
		const seen = await observed(admin.secret, res.body.batch);
		inOrder(seen, MATCH);
		expect(seen.at(-1).progress).toEqual({ lines: 3, done: 3, succeeded: 3, failed: 0 });
	});
});

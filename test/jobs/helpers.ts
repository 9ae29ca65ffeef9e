// Batches and exports in tests: an input file uploaded, a job made, its object's steps run one
// at a time (its alarm, fired as at its time), and its files read.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "../support/requests";
import { download, uploaded } from "../docs/helpers";
import { sessionsToo } from "../support/faults";
import { type Account, member, role } from "../support/accounts";
import { idOf } from "../support/shards";
import { inImplementation, objectEnv } from "../support/objects";
import type { JobState } from "../../src/jobs/store";
import type { JobSpec } from "../../src/db/job-records";

const encoder = new TextEncoder();

export const ndjson = (lines: unknown[]) =>
	lines.map((line) => `${typeof line === "string" ? line : JSON.stringify(line)}\n`).join("");

// An upload of the caller's holding `text`.
export async function uploadedText(secret: string, text: string) {
	return uploaded(secret, encoder.encode(text));
}

// A file batch of `operation` over `lines`, made by `secret`.
export async function fileBatch(
	secret: string,
	operation: string,
	lines: unknown[],
	extra: Record<string, unknown> = {},
) {
	const upload = await uploadedText(secret, ndjson(lines));
	const res = await call("POST", "/batches", { secret, body: { operation, handler: upload.handler, ...extra } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return { ...res.body, upload } as { batch: string; status: string; hash: string; upload: typeof upload };
}

const stub = (job: string) => env.BATCHES.getByName(job);

// A job's alarm fires on its own in the tests as in production, so a job runs to its end while a
// test looks on. A held job steps only when the test steps it: whenever its object sets its
// alarm, the alarm is put this far ahead, and `stepJob` fires it.
const HELD_MS = 30 * 86_400_000;
const held = new Set<string>();

// Holds the job: its object's timers set its alarm far ahead from now on. Again after a restart
// (the hold is the running object's).
async function hold(job: string) {
	held.add(job);
	type Holdable = { timers: { storage: DurableObjectStorage & { held?: true } } };
	await inImplementation(stub(job) as never, async (instance: unknown, state: DurableObjectState) => {
		const timers = (instance as Holdable).timers;
		if (timers.storage.held) return;
		const storage = state.storage;
		timers.storage = new Proxy(storage, {
			get(target, property) {
				if (property === "held") return true;
				if (property === "setAlarm") return (_at: number) => target.setAlarm(Date.now() + HELD_MS);
				const value = Reflect.get(target, property, target);
				return typeof value === "function" ? value.bind(target) : value;
			},
		});
		if ((await storage.getAlarm()) !== null) await storage.setAlarm(Date.now() + HELD_MS);
	});
}

// Every job the account makes from now on (until the test ends) is held as its object starts,
// before its row is written: none of its steps runs but those the test runs with `stepJob`.
// Answers the uuids of the jobs started, in order (a create that failed after starting its job's
// object included).
export async function holdJobs(account: string): Promise<string[]> {
	const real = env.BATCHES;
	const started: string[] = [];
	await objectEnv(account, {
		BATCHES: {
			getByName: (name: string) => ({
				start: async (spec: JobSpec) => {
					await real.getByName(name).start(spec);
					await hold(name);
					started.push(name);
				},
			}),
		},
	});
	return started;
}

// One step of the job, as its alarm runs it when due: answers whether an alarm was set.
export async function stepJob(job: string): Promise<boolean> {
	if (held.has(job)) await hold(job);
	await runInDurableObject(stub(job), async (_instance: unknown, state: DurableObjectState) => {
		const alarm = await state.storage.getAlarm();
		if (alarm !== null) state.storage.sql.exec("UPDATE timers SET due_ms = ? WHERE due_ms <= ?", Date.now(), alarm);
	});
	return runDurableObjectAlarm(stub(job));
}

const TERMINAL = ["hash_mismatch", "validation_failed", "completed", "cancelled"];

// The job's steps until its status is one of `statuses` (an end by default); answers its record.
export async function runJob(
	secret: string,
	path: string,
	statuses: string[] = TERMINAL,
	maxSteps = 500,
): Promise<any> {
	const job = path.split("/").pop()!;
	for (let step = 0; step < maxSteps; step++) {
		const res = await call("GET", path, { secret });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		if (statuses.includes(res.body.status)) return res.body;
		await stepJob(job);
	}
	throw new Error(`${path} did not reach ${statuses.join(" or ")} in ${maxSteps} steps`);
}

// The lines of a results file, parsed.
export async function resultsOf(url: string): Promise<any[]> {
	const got = await download(url);
	expect(got.status).toBe(200);
	const text = new TextDecoder().decode(got.bytes);
	return text === ""
		? []
		: text
				.trimEnd()
				.split("\n")
				.map((line) => JSON.parse(line));
}

// How many twins the account owns in D1.
export async function twinCount(db: D1Database, account: string): Promise<number> {
	const row = await db.prepare("SELECT count(*) AS n FROM twins WHERE owner = ?").bind(account).first<{ n: number }>();
	return row!.n;
}

// The job's state as its object last stored it (src/jobs/store.ts), or undefined once the object
// has forgotten the job.
export async function storedState(job: string): Promise<JobState | undefined> {
	return runInDurableObject(stub(job), (_instance: unknown, state: DurableObjectState) => {
		const sql = state.storage.sql;
		if (sql.exec("SELECT name FROM sqlite_master WHERE name = 'job'").toArray().length === 0) return undefined;
		const [row] = sql.exec<{ state: string }>("SELECT state FROM job WHERE id = 1").toArray();
		return row ? (JSON.parse(row.state) as JobState) : undefined;
	});
}

// Changes the job's stored state, then restarts its object as an eviction would (storage and
// alarm kept), so that its next step reads the state again: the object as it would be after
// dying at that point.
export async function changeStoredState(job: string, change: (state: JobState) => void) {
	await runInDurableObject(stub(job), (_instance: unknown, state: DurableObjectState) => {
		const [row] = state.storage.sql.exec<{ state: string }>("SELECT state FROM job WHERE id = 1").toArray();
		if (!row) throw new Error(`job ${job} has no stored state`);
		const parsed = JSON.parse(row.state) as JobState;
		change(parsed);
		state.storage.sql.exec("UPDATE job SET state = ? WHERE id = 1", JSON.stringify(parsed));
	});
	await evictDurableObject(stub(job));
}

// Changes what the job's object reads from its environment (MAX_BATCH_LINES, a D1 binding) from
// its next step on, until the object restarts: its steps read `this.env` each time.
export async function jobEnv(job: string, changes: Partial<Record<keyof Env, unknown>>) {
	type Swappable = { env: Env };
	await inImplementation(stub(job) as never, (instance: unknown) => {
		const swappable = instance as Swappable;
		swappable.env = { ...swappable.env, ...changes } as Env;
	});
}

// D1 that calls `before(job, line)` before it commits a write carrying a batch line's mark (the
// `job_lines` row a line's write commits with, src/db/jobs.ts): the hook may wait (a cancel
// arriving while the line is in flight) or throw (the line's write fails). Other statements pass.
export function beforeLineWrites(
	db: D1Database,
	before: (job: string, line: number) => void | Promise<void>,
): D1Database {
	const marks = new WeakMap<object, { statement: D1PreparedStatement; job: string; line: number }>();
	const marking = (statement: D1PreparedStatement): D1PreparedStatement =>
		new Proxy(statement, {
			get(target, property) {
				if (property === "bind")
					return (...values: unknown[]) => {
						const bound = target.bind(...values);
						const proxy = marking(bound);
						marks.set(proxy, { statement: bound, job: String(values[0]), line: Number(values[1]) });
						return proxy;
					};
				const value = Reflect.get(target, property, target);
				return typeof value === "function" ? value.bind(target) : value;
			},
		});
	return new Proxy(db, {
		get(target, property) {
			const session = sessionsToo(target, property, (d1) => beforeLineWrites(d1, before));
			if (session) return session;
			if (property === "prepare")
				return (query: string) => {
					const statement = target.prepare(query);
					return /^\s*insert\s+into\s+"?job_lines"?/i.test(query) ? marking(statement) : statement;
				};
			if (property === "batch")
				return async (statements: D1PreparedStatement[]) => {
					for (const statement of statements) {
						const mark = marks.get(statement);
						if (mark) await before(mark.job, mark.line);
					}
					return target.batch(statements.map((statement) => marks.get(statement)?.statement ?? statement));
				};
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// A user of the account that is no administrator (its role, made through the API, denies one
// operation): it sees only its own jobs.
export async function plainUser(admin: Account): Promise<Account> {
	const name = `Plain ${idOf(admin.account).slice(0, 8)}`;
	return member(admin, await role(admin, { effect: "deny", actions: ["create_user"] }, {}, name));
}

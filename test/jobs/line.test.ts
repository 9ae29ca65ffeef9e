// A batch's line run as its creator's call (src/jobs/line.ts): it answers as the Worker answers
// the same request, and it writes exactly once: a second run of the same line (same job and line)
// writes nothing and answers `already`, while a refusal leaves no mark behind.
import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import type { Caller } from "../../src/base/caller";
import { D1Meter } from "../../src/db/meter";
import { Sessions } from "../../src/db/shards";
import { authenticate } from "../../src/http/auth";
import type { BatchableName } from "../../src/operations/batchable";
import { type LineAnswer, type LineCall, lineCommitted, runLine } from "../../src/jobs/line";
import { type Account, bootstrap, bootstrapOn, member, role, userWith, userWithRules } from "../support/accounts";
import { until } from "../support/waiting";
import { BASE, call } from "../support/requests";
import { loggedErrors } from "../support/faults";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { dbOf, idOf } from "../support/shards";
import { attachDoc, docPath, patterned } from "../docs/helpers";
import { putStickers, stickerPath } from "../stickers/helpers";

// The caller as the Worker's authentication finds it for the account's secret.
async function callerOf(account: Account): Promise<Caller> {
	const request = new Request(BASE, { headers: { authorization: account.secret } });
	const caller = await authenticate(request, new Sessions(env, new D1Meter()));
	return { ...caller, dict: null };
}

const runtime = () => {
	const ctx = createExecutionContext();
	return { env, waitUntil: (promise: Promise<unknown>) => ctx.waitUntil(promise) };
};

// A job of the account: its uuid names the account's database, as every id the account makes.
const jobOf = (account: Account) => idOf(account.account);

// An answer as a client compares two: without the trace, each uuid and each time the same.
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
function shape(value: unknown): unknown {
	if (typeof value === "string") return UUID.test(value) ? "<uuid>" : value;
	if (typeof value === "number") return value > 1e9 ? "<time>" : value;
	if (Array.isArray(value)) return value.map(shape);
	if (value !== null && typeof value === "object")
		return Object.fromEntries(
			Object.entries(value)
				.filter(([key]) => key !== "trace")
				.map(([key, inner]) => [UUID.test(key) ? "<uuid>" : key, shape(inner)]),
		);
	return value;
}

// Rows read straight from D1, in the database of the first id bound.
const rows = async (sql: string, ...binds: unknown[]) =>
	(
		await dbOf(binds[0] as string)
			.prepare(sql)
			.bind(...binds)
			.all()
	).results;

async function markOf(job: string, line: number) {
	return dbOf(job).prepare("SELECT job, line, trace FROM job_lines WHERE job = ? AND line = ?").bind(job, line).first();
}

const IDENTITY = "RFID#4b2a9f";
const IDENTITY_PATH = encodeURIComponent(IDENTITY);
const DOC = "manuals/pump.txt";

// Each batchable operation: what its line and the Worker's request of it do on a twin made
// ready the same way (`ready`), and the rows its write leaves (`state`), read after each run.
type Case = {
	ready?: (admin: Account, twin: string) => Promise<void>;
	line: (twin: string, admin: Account) => Omit<LineCall, "name">;
	request: (twin: string, admin: Account) => { method: string; path: string; body?: unknown };
	state: (admin: Account, twin: string) => Promise<unknown>;
};

const twinRow = (_: Account, twin: string) => rows("SELECT * FROM twins WHERE uuid = ?", twin);
const identityRows = (_: Account, twin: string) => rows("SELECT * FROM twin_identities WHERE twin = ?", twin);
const ledgerRows = async (_: Account, twin: string) => [
	await rows("SELECT * FROM ledger_entries WHERE twin = ? ORDER BY name", twin),
	await rows("SELECT * FROM ledger_history WHERE twin = ? ORDER BY name, ts", twin),
];
const docRows = async (admin: Account, twin: string) => [
	await rows("SELECT * FROM docs WHERE twin = ?", twin),
	await rows("SELECT doc_bytes FROM accounts WHERE uuid = ?", admin.account),
];
const stickerRows = (_: Account, twin: string) => rows("SELECT * FROM stickers WHERE twin = ?", twin);

const withIdentity = async (admin: Account, twin: string) => {
	const res = await call("POST", `/twins/${twin}/identities`, {
		secret: admin.secret,
		body: { identities: { [IDENTITY]: {} } },
	});
	expect(res.status).toBe(201);
};
const withEntry = async (admin: Account, twin: string) => {
	await addEntries(admin.secret, twin, { temp: { value: 1, history: "1D" } });
};
const withDoc = async (admin: Account, twin: string) => {
	await attachDoc(admin.secret, twin, DOC, patterned(64));
};
const withSticker = async (admin: Account, twin: string) => {
	await putStickers(admin.secret, twin, { red: { note: "look", recipients: [admin.user] } });
};

const CASES: Record<BatchableName, Case> = {
	create_twin: {
		line: () => ({ params: {}, query: {}, body: { description: { site: "north" } } }),
		request: () => ({ method: "POST", path: "/twins", body: { description: { site: "north" } } }),
		state: (admin) => rows("SELECT count(*) AS n FROM twins WHERE owner = ?", admin.account),
	},
	update_twin: {
		line: (twin) => ({ params: { twin }, query: {}, body: { description: { site: "south" } } }),
		request: (twin) => ({ method: "PATCH", path: `/twins/${twin}`, body: { description: { site: "south" } } }),
		state: twinRow,
	},
	terminate_twin: {
		line: (twin) => ({ params: { twin }, query: {} }),
		request: (twin) => ({ method: "DELETE", path: `/twins/${twin}` }),
		state: twinRow,
	},
	create_twin_identity: {
		line: (twin) => ({ params: { twin }, query: {}, body: { identities: { [IDENTITY]: { validity_ts: null } } } }),
		request: (twin) => ({
			method: "POST",
			path: `/twins/${twin}/identities`,
			body: { identities: { [IDENTITY]: { validity_ts: null } } },
		}),
		state: identityRows,
	},
	update_twin_identity: {
		ready: withIdentity,
		line: (twin) => ({ params: { twin, identity: IDENTITY }, query: {}, body: { validity_ts: 4102444800 } }),
		request: (twin) => ({
			method: "PATCH",
			path: `/twins/${twin}/identities/${IDENTITY_PATH}`,
			body: { validity_ts: 4102444800 },
		}),
		state: identityRows,
	},
	delete_twin_identity: {
		ready: withIdentity,
		line: (twin) => ({ params: { twin, identity: IDENTITY }, query: {} }),
		request: (twin) => ({ method: "DELETE", path: `/twins/${twin}/identities/${IDENTITY_PATH}` }),
		state: identityRows,
	},
	add_twin_ledger_entry: {
		line: (twin) => ({
			params: { twin, ledger: "personal" },
			query: {},
			body: { entries: { temp: { value: 20, history: "1D" } } },
		}),
		request: (twin) => ({
			method: "POST",
			path: ledger(twin),
			body: { entries: { temp: { value: 20, history: "1D" } } },
		}),
		state: ledgerRows,
	},
	update_twin_ledger_entry: {
		ready: withEntry,
		line: (twin) => ({ params: { twin, ledger: "personal" }, query: {}, body: { entries: { temp: { value: 21 } } } }),
		request: (twin) => ({ method: "PATCH", path: ledger(twin), body: { entries: { temp: { value: 21 } } } }),
		state: ledgerRows,
	},
	update_twin_ledger_entry_value: {
		ready: withEntry,
		line: (twin) => ({ params: { twin, ledger: "personal" }, query: {}, body: { entries: { temp: { value: 22 } } } }),
		request: (twin) => ({
			method: "PATCH",
			path: ledger(twin, "personal", "/value"),
			body: { entries: { temp: { value: 22 } } },
		}),
		state: ledgerRows,
	},
	delete_twin_ledger_entry: {
		ready: withEntry,
		line: (twin) => ({ params: { twin, ledger: "personal" }, query: { entries: "temp" } }),
		request: (twin) => ({ method: "DELETE", path: `${ledger(twin)}?entries=temp` }),
		state: ledgerRows,
	},
	update_twin_doc: {
		ready: withDoc,
		line: (twin) => ({ params: { twin, doc_name: DOC }, query: {}, body: { description: { lang: "de" } } }),
		request: (twin) => ({ method: "PATCH", path: docPath(twin, DOC), body: { description: { lang: "de" } } }),
		state: docRows,
	},
	delete_twin_doc: {
		ready: withDoc,
		line: (twin) => ({ params: { twin, doc_name: DOC }, query: {} }),
		request: (twin) => ({ method: "DELETE", path: docPath(twin, DOC) }),
		state: docRows,
	},
	put_sticker: {
		line: (twin, admin) => ({
			params: { twin },
			query: {},
			body: { stickers: { red: { note: "look", recipients: [admin.user] } } },
		}),
		request: (twin, admin) => ({
			method: "POST",
			path: stickerPath(twin),
			body: { stickers: { red: { note: "look", recipients: [admin.user] } } },
		}),
		state: stickerRows,
	},
	remove_sticker: {
		ready: withSticker,
		line: (twin) => ({ params: { twin, color: "red" }, query: { context: "personal" } }),
		request: (twin) => ({ method: "DELETE", path: stickerPath(twin, "red", "?context=personal") }),
		state: stickerRows,
	},
};

const answered = (answer: LineAnswer) => {
	if ("already" in answer) throw new Error(`the line answered already (${answer.trace})`);
	return answer;
};

describe("a batch's line", () => {
	for (const [name, spec] of Object.entries(CASES) as [BatchableName, Case][]) {
		it(`${name}: answers as the Worker's request does, writes, and a second run writes nothing`, async () => {
			// A second run that meets the mark fails, and the failure is logged.
			loggedErrors();
			const admin = await bootstrap();
			const caller = await callerOf(admin);
			const [mine, theirs] = [await newTwin(admin.secret), await newTwin(admin.secret)];
			await spec.ready?.(admin, mine);
			await spec.ready?.(admin, theirs);
			const before = await spec.state(admin, mine);
			const mark = { job: jobOf(admin), line: 7 };

			const first = answered(await runLine(runtime(), caller, { name, ...spec.line(mine, admin) }, mark));
			const { method, path, body } = spec.request(theirs, admin);
			const res = await call(method, path, { secret: admin.secret, body });
			expect(first.status, JSON.stringify(first.body)).toBe(res.status);
			expect(first.status).toBeLessThan(300);
			expect(shape(first.body)).toEqual(shape(res.body));
			const after = await spec.state(admin, mine);
			expect(after).not.toEqual(before);
			expect(await markOf(mark.job, mark.line)).toEqual({ ...mark, trace: first.trace });
			expect(await lineCommitted(env, mark.job, mark.line)).toBe(true);

			const again = await runLine(runtime(), caller, { name, ...spec.line(mine, admin) }, mark);
			expect(again).toEqual({ already: true, trace: first.trace });
			expect(await spec.state(admin, mine)).toEqual(after);
		});
	}

	it("answers an absent twin's 404102 as the Worker does, and leaves no mark: a later run still writes", async () => {
		const admin = await bootstrap();
		const caller = await callerOf(admin);
		const mark = { job: jobOf(admin), line: 1 };
		const absent = idOf(admin.account);
		const line = (twin: string): LineCall => ({
			name: "update_twin",
			params: { twin },
			query: {},
			body: { description: { a: 1 } },
		});
		const refused = answered(await runLine(runtime(), caller, line(absent), mark));
		const res = await call("PATCH", `/twins/${idOf(admin.account)}`, {
			secret: admin.secret,
			body: { description: { a: 1 } },
		});
		expect(res.status).toBe(404);
		expect(refused).toEqual({
			status: 404,
			subcode: 404102,
			body: { ...res.body, trace: refused.trace },
			trace: refused.trace,
		});
		expect(await markOf(mark.job, mark.line)).toBeNull();
		expect(await lineCommitted(env, mark.job, mark.line)).toBe(false);

		const twin = await newTwin(admin.secret);
		const written = answered(await runLine(runtime(), caller, line(twin), mark));
		expect(written.status).toBe(200);
		expect(written.body).toMatchObject({ uuid: twin, description: { a: 1 } });
	});

	it("refuses a role without the operation's statement with 403101, and leaves no mark", async () => {
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "allow", actions: ["get_twin"] });
		const mark = { job: jobOf(admin), line: 2 };
		const refused = answered(
			await runLine(runtime(), await callerOf(reader), { name: "create_twin", params: {}, query: {} }, mark),
		);
		expect(refused).toMatchObject({
			status: 403,
			subcode: 403101,
			body: { subcode: 403101, code: "operation_forbidden" },
		});
		expect(await markOf(mark.job, mark.line)).toBeNull();
		expect(await rows("SELECT count(*) AS n FROM twins WHERE owner = ?", admin.account)).toEqual([{ n: 0 }]);
	});

	it("answers an invalid body with the Worker's 400101 and its details", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const body = { description: { a: 1 }, extra: true };
		const refused = answered(
			await runLine(
				runtime(),
				await callerOf(admin),
				{ name: "update_twin", params: { twin }, query: {}, body },
				{ job: jobOf(admin), line: 3 },
			),
		);
		const res = await call("PATCH", `/twins/${twin}`, { secret: admin.secret, body });
		expect(refused.status).toBe(400);
		expect(shape(refused.body)).toEqual(shape(res.body));
	});

	it("keeps a refusal its write committed with its mark: a run that found the twin terminated answers 400103", async () => {
		loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		const mark = { job: jobOf(admin), line: 4 };
		const line: LineCall = { name: "terminate_twin", params: { twin }, query: {} };
		const refused = answered(await runLine(runtime(), await callerOf(admin), line, mark));
		expect(refused).toMatchObject({ status: 400, subcode: 400103 });
		expect(await markOf(mark.job, mark.line)).toEqual({ ...mark, trace: refused.trace });
		expect(await runLine(runtime(), await callerOf(admin), line, mark)).toEqual({
			already: true,
			trace: refused.trace,
		});
	});

	it("runs lines of one ledger in a group: a line run again fails alone, the others write", async () => {
		loggedErrors();
		const admin = await bootstrap();
		const caller = await callerOf(admin);
		const twin = await newTwin(admin.secret);
		const job = jobOf(admin);
		const add = (entry: string): LineCall => ({
			name: "add_twin_ledger_entry",
			params: { twin, ledger: "personal" },
			query: {},
			body: { entries: { [entry]: { value: entry } } },
		});
		const first = answered(await runLine(runtime(), caller, add("a"), { job, line: 1 }));
		expect(first.status).toBe(201);
		// The rerun of line 1 would add another entry: only its mark refuses it.
		const [again, b, c] = await Promise.all([
			runLine(runtime(), caller, add("z"), { job, line: 1 }),
			runLine(runtime(), caller, add("b"), { job, line: 2 }),
			runLine(runtime(), caller, add("c"), { job, line: 3 }),
		]);
		expect(again).toEqual({ already: true, trace: first.trace });
		expect(answered(b).status).toBe(201);
		expect(answered(c).status).toBe(201);
		const names = await rows("SELECT name FROM ledger_entries WHERE twin = ? ORDER BY name", twin);
		expect(names).toEqual([{ name: "a" }, { name: "b" }, { name: "c" }]);
	});
});

// A write whose rows are in another database than the job's: a doc on another account's twin
// there, a sticker of another account there removed by its recipient. No batch spans the two
// databases, yet a second run of the line still writes nothing.
describe("a batch's line across databases", () => {
	// An account on DB_0 whose twin a user of an account on DB_1 sees.
	async function apart() {
		const owner = await bootstrapOn("DB_0");
		const twin = await newTwin(owner.secret, { shared: true });
		const other = await bootstrapOn("DB_1");
		const user = await userWithRules(other, { twin: "TWIN.shared == true" });
		return { owner, twin, other, user };
	}
	const docRow = (twin: string) => rows("SELECT * FROM docs WHERE twin = ?", twin);

	it("update_twin_doc on another database's twin marks the line in the job's, and a second run writes nothing", async () => {
		loggedErrors();
		const { twin, user } = await apart();
		await attachDoc(user.secret, twin, DOC, patterned(32));
		const mark = { job: jobOf(user), line: 1 };
		const line: LineCall = {
			name: "update_twin_doc",
			params: { twin, doc_name: DOC },
			query: {},
			body: { description: { lang: "fr" } },
		};
		const first = answered(await runLine(runtime(), await callerOf(user), line, mark));
		expect(first.status).toBe(200);
		expect(first.body).toMatchObject({ description: { lang: "fr" } });
		expect(await markOf(mark.job, mark.line)).toEqual({ ...mark, trace: first.trace });
		const after = await docRow(twin);
		expect(await runLine(runtime(), await callerOf(user), line, mark)).toEqual({ already: true, trace: first.trace });
		expect(await docRow(twin)).toEqual(after);
	});

	it("delete_twin_doc on another database's twin marks the line with its move, and a second run answers already", async () => {
		loggedErrors();
		const { twin, user } = await apart();
		await attachDoc(user.secret, twin, DOC, patterned(32));
		const mark = { job: jobOf(user), line: 2 };
		const line: LineCall = { name: "delete_twin_doc", params: { twin, doc_name: DOC }, query: {} };
		const first = answered(await runLine(runtime(), await callerOf(user), line, mark));
		expect(first.status).toBe(200);
		expect(await docRow(twin)).toEqual([]);
		expect(await markOf(mark.job, mark.line)).toEqual({ ...mark, trace: first.trace });
		expect(await runLine(runtime(), await callerOf(user), line, mark)).toEqual({ already: true, trace: first.trace });
	});

	it("remove_sticker by a recipient of another database marks the line in the recipient's job's", async () => {
		loggedErrors();
		const putting = await bootstrapOn("DB_0");
		const receiving = await bootstrapOn("DB_1");
		const putter = await member(putting, await role(putting, { effect: "deny", actions: null }, { twin: "true" }));
		const twin = await newTwin(receiving.secret);
		await putStickers(putter.secret, twin, { red: { recipients: [receiving.user] } });
		await until(
			() => call("GET", stickerPath(twin), { secret: receiving.secret }),
			(res) => res.body?.accounts?.[putting.account]?.red !== undefined,
			"the recipient's copy",
			5_000,
		);
		const mark = { job: jobOf(receiving), line: 3 };
		const line: LineCall = {
			name: "remove_sticker",
			params: { twin, color: "red" },
			query: { context: putting.account },
		};
		const first = answered(await runLine(runtime(), await callerOf(receiving), line, mark));
		expect(first.status, JSON.stringify(first.body)).toBe(200);
		const stickers = () =>
			dbOf(putting.account)
				.prepare("SELECT count(*) AS n FROM stickers WHERE twin = ? AND account = ?")
				.bind(twin, putting.account)
				.first();
		expect(await stickers()).toEqual({ n: 0 });
		expect(await markOf(mark.job, mark.line)).toEqual({ ...mark, trace: first.trace });
		expect(await runLine(runtime(), await callerOf(receiving), line, mark)).toEqual({
			already: true,
			trace: first.trace,
		});
	});
});

describe("a line's request log", () => {
	let lines: Record<string, unknown>[] = [];
	let spies: { log: MockInstance<typeof console.log>; error: MockInstance<typeof console.error> };
	beforeEach(() => {
		lines = [];
		const read = (text: unknown) => {
			if (typeof text === "string" && text.startsWith('{"trace":')) lines.push(JSON.parse(text));
		};
		spies = {
			log: vi.spyOn(console, "log").mockImplementation(read),
			error: vi.spyOn(console, "error").mockImplementation(read),
		};
	});
	afterEach(() => {
		spies.log.mockRestore();
		spies.error.mockRestore();
	});

	it("writes one line per run, as a request's, with the run's trace", async () => {
		const admin = await bootstrap();
		const caller = await callerOf(admin);
		const mark = { job: jobOf(admin), line: 1 };
		const line: LineCall = { name: "create_twin", params: {}, query: {}, body: {} };
		const first = answered(await runLine(runtime(), caller, line, mark));
		const again = await runLine(runtime(), caller, line, mark);
		expect(again).toEqual({ already: true, trace: first.trace });
		const ours = lines.filter((logged) => logged.operation === "create_twin");
		expect(ours).toHaveLength(2);
		expect(ours[0]).toEqual({
			trace: first.trace,
			operation: "create_twin",
			method: "POST",
			route: "/twins",
			status: 201,
			account: admin.account,
			user: admin.user,
			ms: expect.any(Number),
			d1_rows_read: expect.any(Number),
			d1_rows_written: expect.any(Number),
		});
		// The second run met the mark: a failure of the run, logged as one, with its own trace.
		expect(ours[1]).toMatchObject({ status: 500, subcode: 500101, error: expect.stringContaining("job_lines") });
		expect(ours[1]!.trace).not.toBe(first.trace);
	});
});

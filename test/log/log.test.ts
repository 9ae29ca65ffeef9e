import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { KEPT_MESSAGES, KEPT_SECONDS, logStatements } from "../../src/db/log";
import { writeLedger } from "../support/ledger-writes";
import { truncationLog } from "../../src/db/outbox";
import { RETRY_SCHEDULE } from "../../src/notifications/retry-schedule";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, userWith, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries } from "../support/ledgers";
import { until } from "../support/waiting";
import { confirmedSubscription, consume, receiver, subscribeRecording } from "../support/webhooks";
import { logLines } from "./helpers";
import { dbOf } from "../support/shards";

// Lines written into the account's log as background work writes them.
async function writeLines(account: string, at: number, messages: string[]) {
	const db = database(dbOf(account));
	const [first, ...rest] = logStatements(db, account, at, messages);
	await db.batch([first, ...rest]);
}

const read = (secret: string, fragment?: string) =>
	call("GET", `/log${fragment === undefined ? "" : `?fragment=${fragment}`}`, { secret });

describe("get_log", () => {
	it("answers an empty log with no messages and a null fragment", async () => {
		const admin = await bootstrap();
		const res = await read(admin.secret);
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ fragment: null, messages: [] });
	});

	it("pages oldest first by 100, and tails: a fragment answers only what came after it", async () => {
		const admin = await bootstrap();
		const at = Date.now() / 1000;
		const lines = Array.from({ length: 150 }, (_, i) => `Line: n=[${i}], ts=[${at}].`);
		await writeLines(admin.account, at, lines);
		const first = await read(admin.secret);
		expect(first.body.messages).toEqual(lines.slice(0, 100));
		expect(first.body.fragment).toMatch(/^[0-9A-Za-z_-]{1,64}$/);
		const second = await read(admin.secret, first.body.fragment);
		expect(second.body.messages).toEqual(lines.slice(100));
		// Nothing new: the same fragment comes back, and reading on waits at the end.
		const idle = await read(admin.secret, second.body.fragment);
		expect(idle.body).toEqual({ fragment: second.body.fragment, messages: [] });
		await writeLines(admin.account, at, ["Later: n=[1]."]);
		expect((await read(admin.secret, second.body.fragment)).body.messages).toEqual(["Later: n=[1]."]);
	});

	it("refuses a malformed fragment, and one another account's log gave, with 400101", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		await writeLines(other.account, Date.now() / 1000, ["Theirs: n=[1]."]);
		const theirs = (await read(other.secret)).body.fragment;
		for (const fragment of [theirs, "x".repeat(65), "not%20ok", "abc.def", "AAAA"]) {
			const res = await read(admin.secret, fragment);
			expectError(res, 400, 400101);
			expect(res.body.details[0].path).toBe("fragment");
		}
		expectError(await call("GET", "/log?limit=5", { secret: admin.secret }), 400, 400101);
	});

	it("shows the account's whole log to a user whose statement allows get_log, whatever its rules; never another account's", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		await writeLines(admin.account, Date.now() / 1000, ["Ours: n=[1]."]);
		await writeLines(other.account, Date.now() / 1000, ["Theirs: n=[1]."]);
		const confined = await userWithRules(admin, { twin: "false", entry: "false", identity: "false" });
		expect((await read(confined.secret)).body.messages).toEqual(["Ours: n=[1]."]);
		const denied = await userWith(admin, { effect: "deny", actions: ["get_log"] });
		expectError(await read(denied.secret), 403, 403101);
	});

	it("keeps an account's newest 1000 lines, none older than 30 days, pruning as lines are written", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const at = Date.now() / 1000;
		await writeLines(admin.account, at - KEPT_SECONDS - 60, ["Old: n=[0]."]);
		await writeLines(other.account, at - KEPT_SECONDS - 60, ["Old elsewhere: n=[0]."]);
		await writeLines(admin.account, at, ["Recent: n=[0]."]);
		expect(await logLines(admin.secret)).toEqual(["Recent: n=[0]."]);
		// Pruning one account leaves the others' lines alone.
		expect(await logLines(other.secret)).toEqual(["Old elsewhere: n=[0]."]);

		const many = Array.from({ length: KEPT_MESSAGES + 5 }, (_, i) => `Many: n=[${i}].`);
		await writeLines(admin.account, at, many.slice(0, 500));
		await writeLines(admin.account, at, many.slice(500));
		const kept = await logLines(admin.secret);
		expect(kept).toHaveLength(KEPT_MESSAGES);
		expect(kept.at(-1)).toBe(many.at(-1));
		expect(kept[0]).toBe(many[many.length - KEPT_MESSAGES]);
	});
});

describe("what background work logs", () => {
	const failedLine = (sub: string, trigger: string, reason: string) =>
		new RegExp(
			`^Webhook delivery failed for good: subscription=\\[${sub}\\], message=\\[[0-9a-f-]{36}\\], trigger=\\[${trigger}\\], reason=\\[${reason}\\], ts=\\[[\\d.]+\\]\\.$`,
		);

	it("a notification answered with a permanent status, in the subscribing account's log only", async () => {
		const publisher = await bootstrap();
		const subscriber = await bootstrap();
		const granted = await call("PATCH", `/notifications/webhooks/access/accounts/${subscriber.account}`, {
			secret: publisher.secret,
			body: { topics: ["news"] },
		});
		expect(granted.status).toBe(200);
		const sub = await confirmedSubscription(subscriber, "news", crypto.randomUUID(), {
			account: publisher.account,
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/410`,
		});
		const twin = await newTwin(publisher.secret);
		await addEntries(publisher.secret, twin, { level: { value: 1, publish: { news: "true" } } });
		const [line] = await until(
			() => logLines(subscriber.secret),
			(lines) => lines.length > 0,
			"the failure's log line",
		);
		expect(line).toMatch(failedLine(sub.uuid, "ledger\\.entry\\.added", "HTTP 410"));
		expect(line).not.toContain(receiver());
		expect(await logLines(publisher.secret)).toEqual([]);
	});

	it("a confirmation answered with a permanent status, and one whose retries ran out", async () => {
		const admin = await bootstrap();
		const gone = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${crypto.randomUUID()}/410` });
		await consume(gone.job);
		const failing = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${crypto.randomUUID()}/503` });
		// Every attempt but the last is retried and logs nothing.
		await consume(failing.job, 1);
		expect(await logLines(admin.secret)).toHaveLength(1);
		// The message's last attempt: as many came before it as the schedule has delays.
		await consume({ ...failing.job, after: RETRY_SCHEDULE.length }, 2);
		const lines = await logLines(admin.secret);
		expect(lines).toHaveLength(2);
		expect(lines[0]).toMatch(failedLine(gone.res.body.subscription.uuid, "Confirmation", "HTTP 410"));
		expect(lines[1]).toMatch(failedLine(failing.res.body.subscription.uuid, "Confirmation", "HTTP 503"));
	});

	it("a fan-out cut at MAX_SUBSCRIPTIONS, in the publisher's log, once per topic cut", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (let i = 0; i < 3; i++) await confirmedSubscription(admin, "crowded", crypto.randomUUID());
		await confirmedSubscription(admin, "quiet", crypto.randomUUID());
		const at = Math.round(Date.now()) / 1000;
		await writeAs(admin, twin, { level: { value: 1, publish: { crowded: "true", quiet: "true" } } }, at, 2);
		expect(await logLines(admin.secret)).toEqual([
			`Notification fan-out truncated at MAX_SUBSCRIPTIONS: topic=[crowded], trigger=[ledger.entry.added], twin=[${twin}], ts=[${at}].`,
		]);
		// Within the bound, nothing is logged.
		await writeAs(admin, twin, { other: { value: 1, publish: { crowded: "true" } } }, at, 3);
		expect(await logLines(admin.secret)).toHaveLength(1);
	});

	it("costs a write within the bound no read of the log: its pruning runs only after a line", async () => {
		const admin = await bootstrap();
		await writeLines(
			admin.account,
			Date.now() / 1000,
			Array.from({ length: KEPT_MESSAGES }, (_, i) => `Line: n=[${i}].`),
		);
		const truncation = async (limit: number) => {
			await confirmedSubscription(admin, "busy", crypto.randomUUID());
			const p = {
				account: admin.account,
				trigger: "ledger.entry.added",
				messages: [{ twin: crypto.randomUUID(), topic: "busy", event: {}, sight: null }],
				at: Date.now() / 1000,
				limit,
			};
			const d1 = dbOf(admin.account);
			const statements = truncationLog(database(d1), p).map((statement) => {
				const query = statement.toSQL();
				return d1.prepare(query.sql).bind(...query.params);
			});
			return d1.batch(statements);
		};
		const [quiet, unpruned] = await truncation(1);
		expect(quiet.meta.changes).toBe(0);
		expect(unpruned.meta.rows_read).toBeLessThanOrEqual(1);
		expect(unpruned.meta.changes).toBe(0);
		// A line written: the log is pruned back to its newest KEPT_MESSAGES.
		const [logged, pruned] = await truncation(1);
		expect(logged.meta.changes).toBe(1);
		expect(pruned.meta.changes).toBe(1);
		const lines = await logLines(admin.secret);
		expect(lines).toHaveLength(KEPT_MESSAGES);
		expect(lines.at(-1)).toMatch(/^Notification fan-out truncated at MAX_SUBSCRIPTIONS: topic=\[busy\]/);
	});
});

// One write straight through writeLedger with its fan-out bound (MAX_SUBSCRIPTIONS).
function writeAs(
	admin: Account,
	twin: string,
	entries: Record<string, { value: unknown; publish: Record<string, string> }>,
	at: number,
	fanOut: number,
) {
	const writer = {
		account: admin.account,
		user: admin.user,
		role: admin.role,
		description: {},
		statement: { effect: "deny" as const, actions: null },
		rules: { twin: null, entry: null, identity: null },
	};
	const twinView = { uuid: twin, owner: admin.account, status: "alive", description: {} };
	return writeLedger(
		database(dbOf(admin.account)),
		{ action: "add_twin_ledger_entry", twin: twinView, writer, conditions: {}, kind: "add", entries: entries as never },
		at,
		{ fanOut },
	);
}

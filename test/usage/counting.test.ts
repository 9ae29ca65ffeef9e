import { describe, expect, it } from "vitest";
import { USAGE_FIELDS } from "../../src/base/usage";
import { call } from "../support/requests";
import { bootstrap, userWith } from "../support/accounts";
import { newTwin } from "../support/twins";
import { ledger, seedLedgers } from "../support/ledgers";
import { until } from "../support/waiting";
import { loggedErrors } from "../support/faults";
import { objectEnv, fireAccountAlarm } from "../support/objects";
import { confirmedSubscription } from "../support/webhooks";
import { storedUsage, usageOf, usageTally, usageTotal } from "./helpers";

// What each request of a user counts (docs/usage.md): itself whatever its answer, the D1 rows its
// Server-Timing reports, the twins it made or ended; and what the account's object counts for
// the account alone: ledger bytes and published messages.

const sum = (rows: Record<string, number>[], field: string) => rows.reduce((total, row) => total + row[field]!, 0);

describe("a user's requests", () => {
	it("count whatever their answer, with the rows their Server-Timing reports, under a secret and a token alike", async () => {
		const admin = await bootstrap();
		const user = await userWith(admin, { effect: "deny", actions: ["get_user"] });
		const tally = usageTally();
		const made = await tally.call("POST", "/twins", { secret: user.secret, body: { description: { a: 1 } } });
		const twin = made.body.uuid as string;
		expect((await tally.call("GET", `/twins/${twin}`, { secret: user.secret })).status).toBe(200);
		expect((await tally.call("GET", `/twins/${crypto.randomUUID()}`, { secret: user.secret })).status).toBe(404);
		expect((await tally.call("GET", `/users/${admin.user}`, { secret: user.secret })).status).toBe(403);
		expect((await tally.call("POST", "/twins", { secret: user.secret, body: { description: [] } })).status).toBe(400);
		expect((await tally.call("GET", "/twins?count=2&details=true", { secret: user.secret })).status).toBe(200);
		const token = (await tally.call("POST", "/token", { secret: user.secret, body: {} })).body.token as string;
		expect((await tally.call("POST", "/twins", { secret: token, body: {} })).status).toBe(201);
		expect((await tally.call("DELETE", `/twins/${twin}`, { secret: token })).status).toBe(200);
		// Terminated already: no twin ended this time.
		expect((await tally.call("DELETE", `/twins/${twin}`, { secret: user.secret })).status).toBe(400);
		// A credential that fails is nobody's request.
		expect((await call("GET", "/whoami", { secret: "A".repeat(64) })).status).toBe(401);

		const expected = tally.of(user.secret, token);
		expect(expected).toMatchObject({ rest_count: 10, twins_created: 2, twins_terminated: 1 });
		expect(expected.db_read_cost).toBeGreaterThan(10);
		expect(expected.db_write_cost).toBeGreaterThan(2);
		expect(usageTotal(await usageOf(admin.secret, `/usage/${user.user}`))).toEqual(expected);
	});

	it("count nothing for a replay of an answer kept for an Idempotency-Key", async () => {
		const admin = await bootstrap();
		const user = await userWith(admin, { effect: "deny", actions: null });
		const tally = usageTally();
		const keyed = { "idempotency-key": "make-one-van" };
		const first = await tally.call("POST", "/twins", {
			secret: user.secret,
			body: { description: { van: 1 } },
			headers: keyed,
		});
		expect(first.status).toBe(201);
		for (let i = 0; i < 2; i++) {
			const replay = await call("POST", "/twins", {
				secret: user.secret,
				body: { description: { van: 1 } },
				headers: keyed,
			});
			expect([replay.status, replay.headers.get("idempotent-replayed"), replay.body.uuid]).toEqual([
				201,
				"true",
				first.body.uuid,
			]);
		}
		const expected = tally.of(user.secret);
		expect(expected).toMatchObject({ rest_count: 1, twins_created: 1 });
		expect(usageTotal(await usageOf(admin.secret, `/usage/${user.user}`))).toEqual(expected);
	});

	it("count for their own user, and all of them for the account, which reads one row per hour", async () => {
		const admin = await bootstrap();
		const first = await userWith(admin, { effect: "deny", actions: null });
		const second = await userWith(admin, { effect: "deny", actions: null });
		const tally = usageTally();
		await tally.call("POST", "/twins", { secret: first.secret, body: {} });
		for (let i = 0; i < 3; i++) await tally.call("GET", "/whoami", { secret: second.secret });
		expect(usageTotal(await usageOf(admin.secret, `/usage/${first.user}`))).toEqual(tally.of(first.secret));
		expect(usageTotal(await usageOf(admin.secret, `/usage/${second.user}`))).toEqual(tally.of(second.secret));

		// Once everything has reached the object: the account's rows hold what its users' rows
		// hold together, the administrator's reads included.
		await usageOf(admin.secret);
		const users = [admin.user, first.user, second.user];
		const settled = async () => {
			const rows = await Promise.all(users.map((user) => storedUsage(admin.account, user)));
			return { users: rows.flat(), account: await storedUsage(admin.account, null) };
		};
		const stored = await until(
			settled,
			(s) => sum(s.account, "rest_count") === sum(s.users, "rest_count") && sum(s.users, "rest_count") >= 9,
			"the counts to reach the object",
		);
		for (const field of USAGE_FIELDS)
			expect([field, sum(stored.account, field)]).toEqual([field, sum(stored.users, field)]);
		expect(stored.account.length).toBeLessThanOrEqual(2);
	});
});

describe("the account's object", () => {
	it("counts the bytes its ledgers grow and shrink, for the account only", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const bytes = async () => ({
			account: usageTotal(await usageOf(admin.secret)).ledger_size_delta,
			user: usageTotal(await usageOf(admin.secret, `/usage/${admin.user}`)).ledger_size_delta,
		});
		const write = async (method: string, tail: string, body: unknown) => {
			const res = await call(method, ledger(twin, "personal", tail), { secret: admin.secret, body });
			expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
		};

		// {"a":"xyz"} is 11 bytes; visibility "true" is stored with it (4 more).
		await write("POST", "", { entries: { a: { value: "xyz", visibility: "true" } } });
		expect(await bytes()).toEqual({ account: 15, user: 0 });
		await write("PATCH", "/value", { entries: { a: { value: "x" } } });
		expect((await bytes()).account).toBe(13);
		// "b":1 and the comma before it.
		await write("POST", "", { entries: { b: { value: 1 } } });
		expect((await bytes()).account).toBe(19);
		// Unchanged values change no byte.
		await write("PATCH", "/value", { entries: { b: { value: 1 } } });
		expect((await bytes()).account).toBe(19);
		await write("DELETE", "", undefined);
		expect(await bytes()).toEqual({ account: 0, user: 0 });
	});

	it("counts a shrinking ledger as negative bytes", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		// Written past the API: the account's usage never saw these bytes arrive.
		await seedLedgers(admin.account, [{ twin, entries: { big: "x".repeat(100), small: 1 } }]);
		expect((await call("DELETE", ledger(twin), { secret: admin.secret })).status).toBe(200);
		// {"big":"xxx…","small":1}
		const size = 2 + (5 + 1 + 102) + 1 + (7 + 1 + 1);
		expect(usageTotal(await usageOf(admin.secret)).ledger_size_delta).toBe(-size);
	});

	it("counts the messages its writes and alarms hand to the queue, once each", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await confirmedSubscription(admin, "events", crypto.randomUUID());
		await confirmedSubscription(admin, "events", crypto.randomUUID());
		const queued: unknown[] = [];
		let down = false;
		await objectEnv(admin.account, {
			WEBHOOKS: {
				sendBatch: async (jobs: unknown[]) => {
					if (down) throw new Error("the queue is down");
					queued.push(...jobs);
				},
			},
		});
		const published = () => usageOf(admin.secret).then((usage) => usageTotal(usage).task_publish_topic_count);
		const add = async (name: string, topic: string) => {
			const res = await call("POST", ledger(twin), {
				secret: admin.secret,
				body: { entries: { [name]: { value: 1, publish: { [topic]: "true" } } } },
			});
			expect(res.status).toBe(201);
		};

		await add("first", "events");
		expect(queued).toHaveLength(2);
		expect(await published()).toBe(2);
		// A topic nobody subscribes to publishes no message.
		await add("second", "nobody-listens");
		expect(await published()).toBe(2);
		// What the queue refused counts when the alarm hands it over.
		down = true;
		const logged = loggedErrors();
		await add("third", "events");
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("the queue is down"));
		expect(await published()).toBe(2);
		down = false;
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		expect(queued).toHaveLength(4);
		expect(await published()).toBe(4);
		expect(usageTotal(await usageOf(admin.secret, `/usage/${admin.user}`)).task_publish_topic_count).toBe(0);
	});
});

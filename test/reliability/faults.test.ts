import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret } from "../support/accounts";
import { failingBatches, loggedErrors, sessionsToo } from "../support/faults";
import { inImplementation } from "../support/objects";
import { consume, received, receiver, storedSubscription, subscribeRecording } from "../support/webhooks";
import type { ConfirmationJob } from "../../src/notifications/jobs";
import type { AccountDO, DeliveryDO } from "../../src/objects";
import { allShards, dbOf, onShardOf } from "../support/shards";

// D1 that fails every statement bound to the given value.
function failingFor(db: D1Database, poisoned: string): D1Database {
	return new Proxy(db, {
		get(target, property) {
			const session = sessionsToo(target, property, (inner) => failingFor(inner, poisoned));
			if (session) return session;
			if (property === "prepare") {
				return (query: string) => {
					const statement = target.prepare(query);
					return new Proxy(statement, {
						get(s, p) {
							if (p === "bind") {
								return (...values: unknown[]) =>
									values.includes(poisoned) ? target.prepare("SELECT * FROM injected_fault") : s.bind(...values);
							}
							const value = Reflect.get(s, p, s);
							return typeof value === "function" ? value.bind(s) : value;
						},
					});
				};
			}
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// Runs `work` while a Durable Object (the account's, where user deletion happens, or a webhook
// message's delivery object) writes through `db` in place of the database holding the rows of
// the account `id` belongs to.
async function withObjectDb<T>(
	stub: DurableObjectStub<AccountDO> | DurableObjectStub<DeliveryDO>,
	id: string,
	db: D1Database,
	work: () => Promise<T>,
): Promise<T> {
	type Swappable = { env: Env };
	const changes = onShardOf(id, db);
	const original = await inImplementation<unknown, Partial<Env>>(stub, (instance) => {
		const o = (instance as unknown as Swappable).env;
		(instance as unknown as Swappable).env = { ...o, ...changes } as Env;
		return Object.fromEntries(Object.keys(changes).map((name) => [name, o[name as keyof Env]]));
	});
	try {
		return await work();
	} finally {
		await inImplementation(stub, (instance) => {
			const swappable = instance as unknown as Swappable;
			swappable.env = { ...swappable.env, ...original };
		});
	}
}

// The rows of a table in every shard.
const count = async (table: string) => {
	const counts = await Promise.all(
		allShards().map(
			async (db) => (await db.prepare(`SELECT count(*) AS n FROM ${table}`).first<{ n: number }>())?.n ?? 0,
		),
	);
	return counts.reduce((a, b) => a + b, 0);
};

describe("D1 failing in the middle of a multi-statement write", () => {
	it("leaves no half-made account", async () => {
		const logged = loggedErrors();
		const before = await Promise.all(["accounts", "roles", "users", "user_secrets"].map(count));
		const res = await call("POST", "/admin/accounts", {
			headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
			// The new account's database is not known before it is made: every shard fails.
			env: { DB_0: failingBatches(env.DB_0), DB_1: failingBatches(env.DB_1) },
		});
		expectError(res, 500, 500101);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("injected_fault"));
		expect(await Promise.all(["accounts", "roles", "users", "user_secrets"].map(count))).toEqual(before);
	});

	it("leaves a user whose deletion failed whole, secret included", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		const res = await withObjectDb(
			env.ACCOUNTS.getByName(admin.account),
			admin.account,
			failingBatches(dbOf(admin.account)),
			() => call("DELETE", `/users/${user}`, { secret: admin.secret }),
		);
		expectError(res, 500, 500101);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("injected_fault"));
		expect((await call("GET", "/whoami", { secret })).body.user).toBe(user);
		expect((await call("DELETE", `/users/${user}`, { secret: admin.secret })).status).toBe(200);
	});

	it("keeps a PIN whose redemption failed, and the old secret with it", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const user = await createUser(admin);
		const old = await issueSecret(admin, user);
		const { pin } = (await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: {} })).body;
		expectError(
			await call("POST", `/secrets/${admin.account}/${pin}`, {
				env: onShardOf(admin.account, failingBatches(dbOf(admin.account))),
			}),
			500,
			500101,
		);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("injected_fault"));
		expect((await call("GET", "/whoami", { secret: old })).status).toBe(200);
		const redeemed = await call("POST", `/secrets/${admin.account}/${pin}`);
		expect(redeemed.status).toBe(201);
		expectError(await call("GET", "/whoami", { secret: old }), 401, 401102);
	});
});

describe("a queue consumer failing mid-batch", () => {
	it("retries only the failed message, and a redelivery sends nothing twice", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const ids = [crypto.randomUUID(), crypto.randomUUID(), crypto.randomUUID()];
		const jobs: ConfirmationJob[] = [];
		for (const id of ids)
			jobs.push((await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/ok` })).job);

		const { createMessageBatch, createExecutionContext, getQueueResult } = await import("cloudflare:test");
		const batch = createMessageBatch(
			"twin-webhooks",
			jobs.map((body, i) => ({ id: `msg-${i}`, timestamp: new Date(), attempts: 1, body })),
		);
		const ctx = createExecutionContext();
		const worker = (await import("../../src/index")).default;
		// Each attempt runs in its message's delivery object: D1 fails there for the second one.
		const poisoned = failingFor(dbOf(jobs[1].subscription), jobs[1].subscription);
		await withObjectDb(env.DELIVERIES.getByName(jobs[1].message), jobs[1].subscription, poisoned, async () =>
			(worker.queue as ExportedHandlerQueueHandler<Env>)(batch, env, ctx),
		);
		const result = await getQueueResult(batch, ctx);
		expect(result.explicitAcks.sort()).toEqual(["msg-0", "msg-2"]);
		expect(result.retryMessages.map((m) => m.msgId)).toEqual(["msg-1"]);
		// The delivery object logs the failure under the job's message and settles it as a retry.
		expect(logged).toHaveBeenCalledWith(expect.stringContaining(`"delivery":"${jobs[1].message}"`));
		expect((await Promise.all(ids.map(received))).map((log) => log.length)).toEqual([1, 0, 1]);

		expect((await consume(jobs[1], 2)).explicitAcks).toHaveLength(1);
		expect((await consume(jobs[0], 2)).explicitAcks).toHaveLength(1);
		expect((await Promise.all(ids.map(received))).map((log) => log.length)).toEqual([1, 1, 1]);
		for (const job of jobs)
			expect(await storedSubscription(job.subscription)).toMatchObject({ delivered_ts: expect.any(Number) });
	});
});

describe("a Durable Object call failing", () => {
	it("answers a 5xx envelope with a trace, and the next request works", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const broken = {
			getByName: () => ({
				createRole: () => Promise.reject(new Error("Durable Object reset because its code was updated")),
			}),
		};
		const res = await call("POST", "/roles", {
			secret: admin.secret,
			body: { name: "Doomed" },
			env: { ACCOUNTS: broken },
		});
		expectError(res, 500, 500101);
		expect(res.body.description).toBe("Internal error");
		expect(logged).toHaveBeenCalledWith(expect.stringContaining(`"trace":"${res.body.trace}"`));
		expect((await call("POST", "/roles", { secret: admin.secret, body: { name: "Fine" } })).status).toBe(201);
		expect(
			Object.values((await call("GET", "/roles", { secret: admin.secret })).body.roles)
				.map((r) => (r as { name: string }).name)
				.sort(),
		).toEqual(["Administrator", "Fine"]);
	});
});

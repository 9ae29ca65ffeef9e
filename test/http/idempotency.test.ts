import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, member } from "../support/accounts";
import { newTwin, walk } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { loggedErrors, sessionsToo } from "../support/faults";
import { outboxOf, confirmedSubscription, recordingQueue, receiver } from "../support/webhooks";
import { dbOf, onShardOf } from "../support/shards";

const keyed = (key: string, headers: Record<string, string> = {}) => ({ "idempotency-key": key, ...headers });

// The account's twins, by a walk of scan_twins.
const twinsOf = async (secret: string) => (await walk(secret, "count=1000")).seen.length;

describe("Idempotency-Key", () => {
	it("makes a retried create_twin create one twin and replay the first answer byte for byte", async () => {
		const admin = await bootstrap();
		const body = { description: { serial: "A-1" } };
		const first = await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("abc-123") });
		const again = await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("abc-123") });
		expect(first.status).toBe(201);
		expect(again.status).toBe(201);
		expect(again.body).toEqual(first.body);
		expect(again.headers.get("idempotent-replayed")).toBe("true");
		expect(first.headers.get("idempotent-replayed")).toBeNull();
		expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"));
		expect(again.headers.get("content-type")).toBe(first.headers.get("content-type"));
		expect(await twinsOf(admin.secret)).toBe(1);
		// Another key, or none, is another request.
		await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("abc-124") });
		await call("POST", "/twins", { secret: admin.secret, body });
		expect(await twinsOf(admin.secret)).toBe(3);
	});

	it("scopes a key to its account", async () => {
		const [a, b] = [await bootstrap(), await bootstrap()];
		const first = await call("POST", "/twins", { secret: a.secret, body: {}, headers: keyed("shared") });
		const second = await call("POST", "/twins", { secret: b.secret, body: {}, headers: keyed("shared") });
		expect(second.headers.get("idempotent-replayed")).toBeNull();
		expect(second.body.uuid).not.toBe(first.body.uuid);
	});

	it("replays an answer only to the user that got it, under the same role and dictionary", async () => {
		const admin = await bootstrap();
		const other = await member(admin, admin.role);
		const body = { description: { serial: "mine" } };
		const first = await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("per-user") });
		// The same request from another user of the account runs nothing and shows nothing.
		const theirs = await call("POST", "/twins", { secret: other.secret, body, headers: keyed("per-user") });
		expectError(theirs, 422, 422101);
		expect(JSON.stringify(theirs.body)).not.toContain(first.body.uuid);
		// The same user with another dictionary, whose rules could see differently.
		const dict = btoa(JSON.stringify({ site: "north" }));
		expectError(
			await call("POST", "/twins", {
				secret: admin.secret,
				body,
				headers: keyed("per-user", { "x-trustedtwin": dict }),
			}),
			422,
			422101,
		);
		expect((await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("per-user") })).body).toEqual(
			first.body,
		);
		expect(await twinsOf(admin.secret)).toBe(1);
	});

	it("makes a retried webhook_subscribe send one confirmation message", async () => {
		const admin = await bootstrap();
		const { jobs, binding } = recordingQueue();
		const body = { topic: "alerts", callback_url: `${receiver()}/r/${crypto.randomUUID()}/ok` };
		const send = () =>
			call("POST", "/notifications/webhooks", {
				secret: admin.secret,
				body,
				headers: keyed("subscribe-1"),
				env: { CALLBACK_POLICY: "any", WEBHOOKS: binding },
			});
		const [first, again] = [await send(), await send()];
		expect([first.status, again.status]).toEqual([201, 201]);
		expect(again.body).toEqual(first.body);
		expect(jobs).toHaveLength(1);
		const listed = await call("GET", "/notifications/webhooks", { secret: admin.secret });
		expect(Object.keys(listed.body.subscriptions)).toEqual([first.body.subscription.uuid]);
	});

	it("ignores the key of a subscribe with a client_secret: its answer holds a key, never stored", async () => {
		const admin = await bootstrap();
		const { binding } = recordingQueue();
		const body = {
			topic: "alerts",
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/ok`,
			client_secret: "Client-secret_16",
		};
		const send = () =>
			call("POST", "/notifications/webhooks", {
				secret: admin.secret,
				body,
				headers: keyed("with-secret"),
				env: { CALLBACK_POLICY: "any", WEBHOOKS: binding },
			});
		const [first, again] = [await send(), await send()];
		expect(again.headers.get("idempotent-replayed")).toBeNull();
		expect(again.body.subscription.uuid).not.toBe(first.body.subscription.uuid);
		const stored = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE account = ?")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(stored?.n).toBe(0);
	});

	it("makes a retried ledger write act once: one entry, one message, the first answer", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "levels", crypto.randomUUID());
		const body = { entries: { level: { value: 1, publish: { levels: "true" } } } };
		const first = await call("POST", ledger(twin), { secret: admin.secret, body, headers: keyed("add-level") });
		const again = await call("POST", ledger(twin), { secret: admin.secret, body, headers: keyed("add-level") });
		expect(first.status).toBe(201);
		// Not 409101 "exists": the same answer as the first time.
		expect(again.status).toBe(201);
		expect(again.body).toEqual(first.body);
		expect(await outboxOf(sub.uuid)).toHaveLength(1);
	});

	it("keeps a refusal the handler decided, with the trace of the request that ran", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { level: { value: 1 } });
		const body = { entries: { level: { value: 2 } }, conditions: { level: "entry_value == 5" } };
		const refused = await call("PATCH", ledger(twin), { secret: admin.secret, body, headers: keyed("guarded") });
		expectError(refused, 409, 409102);
		// The condition holds now, but the key answers what its request got.
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { level: { value: 5 } } } })).status,
		).toBe(200);
		const replayed = await call("PATCH", ledger(twin), { secret: admin.secret, body, headers: keyed("guarded") });
		expect(replayed.status).toBe(409);
		expect(replayed.body).toEqual(refused.body);
		expect(replayed.body.trace).toBe(refused.headers.get("x-request-id"));
		expect(replayed.headers.get("x-request-id")).not.toBe(refused.body.trace);
		expect(replayed.headers.get("idempotent-replayed")).toBe("true");
	});

	it("refuses the key with another method, path or body (422101), doing nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await call("POST", "/twins", { secret: admin.secret, body: { description: { n: 1 } }, headers: keyed("k") });
		for (const [method, path, body] of [
			["POST", "/twins", { description: { n: 2 } }],
			["PATCH", `/twins/${twin}`, { description: { n: 1 } }],
			["POST", "/twins?x=1", { description: { n: 1 } }],
		] as const) {
			const res = await call(method, path, { secret: admin.secret, body, headers: keyed("k") });
			expectError(res, 422, 422101);
			expect(res.body.details[0].path).toBe("Idempotency-Key");
		}
		expect(await twinsOf(admin.secret)).toBe(2);
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({});
	});

	it("answers 409107 while the first request with the key is still running", async () => {
		const admin = await bootstrap();
		// The first request's claim, as it stands while its handler runs.
		const body = JSON.stringify({});
		const first = await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("slow") });
		await dbOf(admin.account)
			.prepare(
				"UPDATE idempotency_keys SET status = NULL, body = NULL, trace = 'another-request', created_ts = ? WHERE account = ? AND key = 'slow'",
			)
			.bind(Date.now() / 1000, admin.account)
			.run();
		const res = await call("POST", "/twins", { secret: admin.secret, body, headers: keyed("slow") });
		expectError(res, 409, 409107);
		expect(await twinsOf(admin.secret)).toBe(1);
		expect(first.status).toBe(201);
	});

	it("lets the same request take over a claim whose request died, once its lease is over", async () => {
		const admin = await bootstrap();
		await dbOf(admin.account)
			.prepare(
				"INSERT INTO idempotency_keys (account, key, fingerprint, trace, created_ts) SELECT ?, 'died', fingerprint, 'dead-request', ? FROM (SELECT '' AS fingerprint)",
			)
			.bind(admin.account, Date.now() / 1000 - 301)
			.run();
		// Another fingerprint: the claim stands for another request, whatever its age.
		expectError(await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed("died") }), 422, 422101);
		const fingerprint = await requestFingerprint(admin, "POST", "/twins", "{}");
		await dbOf(admin.account)
			.prepare("UPDATE idempotency_keys SET fingerprint = ? WHERE account = ? AND key = 'died'")
			.bind(fingerprint, admin.account)
			.run();
		const taken = await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed("died") });
		expect(taken.status).toBe(201);
		expect(taken.headers.get("idempotent-replayed")).toBeNull();
	});

	it("stores nothing for answers given before the handler runs, or for a failure: the corrected or retried request runs", async () => {
		const admin = await bootstrap();
		expectError(
			await call("POST", "/twins", { secret: "x".repeat(64), body: {}, headers: keyed("early") }),
			401,
			401102,
		);
		expectError(
			await call("POST", "/twins", { secret: admin.secret, body: { description: "no" }, headers: keyed("early") }),
			400,
			400101,
		);
		// The key claimed, then the handler's own batch fails: a 500, and the key is free again.
		const logged = loggedErrors();
		const failed = await call("POST", "/twins", {
			secret: admin.secret,
			body: {},
			headers: keyed("early"),
			env: onShardOf(admin.account, failingAfterFirstBatch(dbOf(admin.account))),
		});
		expectError(failed, 500, 500101);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining(failed.headers.get("x-request-id") as string));
		expect(await twinsOf(admin.secret)).toBe(0);
		const ran = await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed("early") });
		expect(ran.status).toBe(201);
		expect(ran.headers.get("idempotent-replayed")).toBeNull();
		expect(await twinsOf(admin.secret)).toBe(1);
	});

	it("refuses a malformed key with 400101 after the credential and the statement", async () => {
		const admin = await bootstrap();
		for (const key of ["", "x".repeat(256), "with space", "tab\there"]) {
			const res = await call("POST", "/twins", { secret: admin.secret, body: {}, headers: { "idempotency-key": key } });
			expectError(res, 400, 400101);
			expect(res.body.details[0].path).toBe("Idempotency-Key");
		}
		expectError(await call("POST", "/twins", { body: {}, headers: keyed("") }), 401, 401101);
		expect(
			(await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed("x".repeat(255)) })).status,
		).toBe(201);
	});

	it("is ignored by other methods, and by operations whose answer carries a credential", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const read = await call("GET", `/twins/${twin}`, { secret: admin.secret, headers: keyed("") });
		expect(read.status).toBe(200);
		const tokens = await Promise.all(
			[1, 2].map(() => call("POST", "/token", { secret: admin.secret, body: {}, headers: keyed("token-1") })),
		);
		expect(tokens.map((t) => t.status)).toEqual([201, 201]);
		expect(tokens[0].body.token).not.toBe(tokens[1].body.token);
		const pins = await Promise.all(
			[1, 2].map(() =>
				call("POST", `/users/${admin.user}/secrets`, { secret: admin.secret, body: {}, headers: keyed("pin-1") }),
			),
		);
		expect(pins[0].body.pin).not.toBe(pins[1].body.pin);
		const stored = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM idempotency_keys WHERE account = ?")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(stored?.n).toBe(0);
	});

	it("keeps a key 24 hours: past them the key is free for any request", async () => {
		const admin = await bootstrap();
		await call("POST", "/twins", { secret: admin.secret, body: { description: { n: 1 } }, headers: keyed("day") });
		await dbOf(admin.account)
			.prepare("UPDATE idempotency_keys SET created_ts = created_ts - 86401 WHERE account = ?")
			.bind(admin.account)
			.run();
		const later = await call("POST", "/twins", {
			secret: admin.secret,
			body: { description: { n: 2 } },
			headers: keyed("day"),
		});
		expect(later.status).toBe(201);
		expect(later.headers.get("idempotent-replayed")).toBeNull();
		expect(await twinsOf(admin.secret)).toBe(2);
	});

	it("frees an expired key even when the account holds more expired keys than one claim prunes", async () => {
		const admin = await bootstrap();
		await call("POST", "/twins", { secret: admin.secret, body: { description: { n: 1 } }, headers: keyed("late") });
		// 150 older expired keys: a claim prunes the 100 oldest, and "late" is not among them.
		const old = Math.floor(Date.now() / 1000) - 2 * 86_400;
		await dbOf(admin.account)
			.prepare(
				"INSERT INTO idempotency_keys (account, key, fingerprint, trace, created_ts, status, body) SELECT ?, 'old-' || value, 'f', 't', ? + value, 201, '{}' FROM json_each(?)",
			)
			.bind(admin.account, old, JSON.stringify(Array.from({ length: 150 }, (_, i) => i)))
			.run();
		await dbOf(admin.account)
			.prepare("UPDATE idempotency_keys SET created_ts = ? WHERE account = ? AND key = 'late'")
			.bind(old + 1000, admin.account)
			.run();
		const later = await call("POST", "/twins", {
			secret: admin.secret,
			body: { description: { n: 2 } },
			headers: keyed("late"),
		});
		expect(later.status).toBe(201);
		expect(later.headers.get("idempotent-replayed")).toBeNull();
		expect(await twinsOf(admin.secret)).toBe(2);
	});
});

describe("the account's quota of kept answers", () => {
	// The account's quota row as D1 holds it.
	const quotaOf = (account: string) =>
		dbOf(account)
			.prepare("SELECT keys, bytes FROM idempotency_quota WHERE account = ?")
			.bind(account)
			.first<{ keys: number; bytes: number }>();
	const post = (
		secret: string,
		key: string,
		quota: Record<string, string>,
		description: Record<string, unknown> = {},
	) => call("POST", "/twins", { secret, body: { description }, headers: keyed(key), env: quota });

	it("refuses a new key past MAX_IDEMPOTENCY_KEYS answers with 409211, runs nothing, and still replays the kept ones", async () => {
		const admin = await bootstrap();
		const quota = { MAX_IDEMPOTENCY_KEYS: "3" };
		const kept = [];
		for (const key of ["k1", "k2", "k3"]) kept.push(await post(admin.secret, key, quota));
		expect(kept.map((res) => res.status)).toEqual([201, 201, 201]);
		expect((await quotaOf(admin.account))?.keys).toBe(3);
		const refused = await post(admin.secret, "k4", quota);
		expectError(refused, 409, 409211);
		expect(refused.body.description).toContain("MAX_IDEMPOTENCY_KEYS");
		expect(await twinsOf(admin.secret)).toBe(3);
		// Kept answers still replay; a request without a key still runs; another account is free.
		const replay = await post(admin.secret, "k2", quota);
		expect(replay.headers.get("idempotent-replayed")).toBe("true");
		expect(replay.body).toEqual(kept[1].body);
		expect((await call("POST", "/twins", { secret: admin.secret, body: {}, env: quota })).status).toBe(201);
		expect((await post((await bootstrap()).secret, "k4", quota)).status).toBe(201);
		// The refusal was not kept: once the window frees a place, the same key runs.
		await dbOf(admin.account)
			.prepare("UPDATE idempotency_keys SET created_ts = created_ts - 86401 WHERE account = ? AND key = 'k1'")
			.bind(admin.account)
			.run();
		const later = await post(admin.secret, "k4", quota);
		expect(later.status).toBe(201);
		expect(later.headers.get("idempotent-replayed")).toBeNull();
		expect((await quotaOf(admin.account))?.keys).toBe(3);
	});

	it("refuses a new key past MAX_IDEMPOTENCY_BYTES of kept answers with 409211", async () => {
		const admin = await bootstrap();
		const big = { text: "x".repeat(20_000) };
		const first = await post(admin.secret, "b1", {}, big);
		const size = new TextEncoder().encode(JSON.stringify(first.body)).length;
		expect((await quotaOf(admin.account))?.bytes).toBe(size);
		const quota = { MAX_IDEMPOTENCY_BYTES: String(Math.floor(1.5 * size)) };
		expect((await post(admin.secret, "b2", quota, big)).status).toBe(201);
		expectError(await post(admin.secret, "b3", quota, big), 409, 409211);
		expect(await twinsOf(admin.secret)).toBe(2);
	});

	it("counts only answers kept: refusals before the handler, 5xx and claims given up count nothing", async () => {
		const admin = await bootstrap();
		expectError(
			await call("POST", "/twins", { secret: admin.secret, body: { description: 5 }, headers: keyed("bad") }),
			400,
			400101,
		);
		expect(await quotaOf(admin.account)).toBeNull();
		await post(admin.secret, "good", {});
		expect((await quotaOf(admin.account))?.keys).toBe(1);
		// Pruning an expired answer takes it out of the count.
		await dbOf(admin.account)
			.prepare("UPDATE idempotency_keys SET created_ts = created_ts - 86401 WHERE account = ?")
			.bind(admin.account)
			.run();
		await post(admin.secret, "next", {});
		expect((await quotaOf(admin.account))?.keys).toBe(1);
	});

	it("tells requests apart by the media type of content-type and by If-Match, as well as by body", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { a: 1, b: 2 });
		const body = { description: { a: null } };
		const send = (headers: Record<string, string>) =>
			call("PATCH", `/twins/${twin}`, { secret: admin.secret, body, headers: keyed("by-type", headers) });
		const merged = await send({ "content-type": "application/merge-patch+json" });
		expect(merged.body.description).toEqual({ b: 2 });
		// The same bytes as application/json would replace the description: another request.
		expectError(await send({ "content-type": "application/json" }), 422, 422101);
		// A parameter of the same media type is the same request.
		const replayed = await send({ "content-type": "application/merge-patch+json; charset=utf-8" });
		expect(replayed.headers.get("idempotent-replayed")).toBe("true");
		expect(replayed.body).toEqual(merged.body);
		expectError(await send({ "content-type": "application/merge-patch+json", "if-match": "*" }), 422, 422101);
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.description).toEqual({ b: 2 });
	});
});

// The fingerprint of a JSON request without If-Match as the Worker computes it: caller, media
// type and If-Match, method, path with query, body.
async function requestFingerprint(caller: { user: string; role: string }, method: string, path: string, body: string) {
	const who = JSON.stringify([caller.user, caller.role, null]);
	const how = JSON.stringify(["application/json", null]);
	const digest = await crypto.subtle.digest(
		"SHA-256",
		new TextEncoder().encode(`${who}\n${how}\n${method} ${path}\n${body}`),
	);
	return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

// D1 whose batches after the first fail once their first statement has run (nothing of them
// remains): the key's claim commits, the handler's write does not.
function failingAfterFirstBatch(db: D1Database): D1Database {
	let batches = 0;
	const wrap = (target: D1Database): D1Database =>
		new Proxy(target, {
			get(inner, property) {
				const session = sessionsToo(inner, property, wrap);
				if (session) return session;
				if (property === "batch") {
					return (statements: D1PreparedStatement[]) =>
						++batches === 1
							? inner.batch(statements)
							: inner.batch([statements[0], inner.prepare("SELECT * FROM injected_fault"), ...statements.slice(1)]);
				}
				const value = Reflect.get(inner, property, inner);
				return typeof value === "function" ? value.bind(inner) : value;
			},
		});
	return wrap(db);
}

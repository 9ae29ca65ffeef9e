import { afterEach, beforeEach, describe, expect, it, type MockInstance, vi } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { ledger } from "../support/ledgers";
import { failingBatches } from "../support/faults";
import { dbOf, onShardOf } from "../support/shards";

// The request log lines the Worker wrote during a test, read from console.log and console.error.
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

const lineOf = (res: { headers: Headers }) => {
	const found = lines.filter((line) => line.trace === res.headers.get("x-request-id"));
	expect(found).toHaveLength(1);
	return found[0];
};

describe("the request log", () => {
	it("says replayed: true on the line of an answer replayed for its Idempotency-Key, and only there", async () => {
		const admin = await bootstrap();
		const keyed = { "idempotency-key": "log-replay" };
		const first = await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed });
		const replay = await call("POST", "/twins", { secret: admin.secret, body: {}, headers: keyed });
		expect(replay.headers.get("idempotent-replayed")).toBe("true");
		expect(lineOf(first)).not.toHaveProperty("replayed");
		expect(lineOf(replay)).toMatchObject({
			operation: "create_twin",
			status: 201,
			replayed: true,
			account: admin.account,
		});
	});

	it("writes one line per request with its operation, route pattern, status, caller and D1 cost", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const res = await call("GET", `/twins/${twin}?show_terminated=true`, { secret: admin.secret });
		const line = lineOf(res);
		expect(Object.keys(line)).toEqual([
			"trace",
			"operation",
			"method",
			"route",
			"status",
			"account",
			"user",
			"ms",
			"d1_rows_read",
			"d1_rows_written",
		]);
		expect(line).toEqual({
			trace: res.headers.get("x-request-id"),
			operation: "get_twin",
			method: "GET",
			route: "/twins/:twin",
			status: 200,
			account: admin.account,
			user: admin.user,
			ms: expect.any(Number),
			d1_rows_read: Number(/rows_read=(\d+)/.exec(res.headers.get("server-timing") as string)?.[1]),
			d1_rows_written: 0,
		});
	});

	it("names the subcode of a refusal, and leaves out the caller it does not know", async () => {
		const admin = await bootstrap();
		const missing = await call("GET", `/twins/${crypto.randomUUID()}`, { secret: admin.secret });
		expect(lineOf(missing)).toMatchObject({
			status: 404,
			subcode: 404102,
			operation: "get_twin",
			account: admin.account,
		});
		const anonymous = await call("GET", "/twins");
		const line = lineOf(anonymous);
		expect(line).toMatchObject({ status: 401, subcode: 401101, operation: "scan_twins", route: "/twins" });
		expect(line).not.toHaveProperty("account");
		expect(lineOf(await call("GET", "/nowhere"))).toMatchObject({
			status: 404,
			subcode: 404101,
			operation: null,
			route: null,
		});
		expect(lineOf(await call("PUT", "/twins"))).toMatchObject({
			status: 405,
			subcode: 405101,
			operation: null,
			route: null,
		});
	});

	it("adds the error and its stack to a 5xx line, on console.error", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/twins", {
			secret: admin.secret,
			body: {},
			env: onShardOf(admin.account, failingBatches(dbOf(admin.account))),
		});
		expect(res.status).toBe(500);
		expect(lineOf(res)).toMatchObject({
			status: 500,
			subcode: 500101,
			error: expect.stringContaining("injected_fault"),
			stack: expect.stringContaining("at "),
		});
		expect(spies.error).toHaveBeenCalledWith(expect.stringContaining(res.headers.get("x-request-id") as string));
	});

	it("honours a W3C traceparent, and never trusts an incoming x-request-id", async () => {
		const admin = await bootstrap();
		const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
		const res = await call("GET", "/whoami", {
			secret: admin.secret,
			headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, "x-request-id": "mine" },
		});
		expect(res.headers.get("x-request-id")).not.toBe("mine");
		expect(lineOf(res)).toMatchObject({ traceparent: traceId, trace: res.headers.get("x-request-id") });
		for (const bad of [
			"00-00000000000000000000000000000000-00f067aa0ba902b7-01",
			`ff-${traceId}-00f067aa0ba902b7-01`,
			"nonsense",
		]) {
			expect(
				lineOf(await call("GET", "/whoami", { secret: admin.secret, headers: { traceparent: bad } })),
			).not.toHaveProperty("traceparent");
		}
	});

	it("holds no secret, token, PIN, body or query value", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const token = (await call("POST", "/token", { secret: admin.secret, body: {} })).body.token as string;
		const pin = (await call("POST", `/users/${admin.user}/secrets`, { secret: admin.secret, body: {} })).body
			.pin as string;
		await call("POST", ledger(twin), { secret: token, body: { entries: { marker: { value: "body-value-7f3a" } } } });
		await call("GET", `${ledger(twin)}?entries=query_value_9c1e`, { secret: admin.secret });
		await call("POST", `/secrets/${admin.account}/${pin}`);
		await call("GET", "/whoami", { headers: { authorization: `Bearer ${admin.secret}x` } });
		const text = JSON.stringify(lines);
		expect(lines.length).toBeGreaterThanOrEqual(6);
		for (const value of [admin.secret, token, pin, "body-value-7f3a", "query_value_9c1e"])
			expect(text).not.toContain(value);
		expect(lines.map((line) => line.route)).toContain("/secrets/:account/:pin");
	});
});

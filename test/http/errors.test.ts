import { describe, expect, it } from "vitest";
import { BASE, call, expectError, fetchWithEnv } from "../support/requests";
import { bootstrap, userWith } from "../support/accounts";
import { loggedErrors } from "../support/faults";
import { onShardOf } from "../support/shards";

describe("error envelope", () => {
	it("answers 404 with the envelope for an unknown route, authenticated or not", async () => {
		const admin = await bootstrap();
		const nowhere = await call("GET", "/nowhere");
		expectError(nowhere, 404, 404101);
		expect(nowhere.headers.get("server-timing")).toBe('d1;dur=0.0;desc="queries=0 rows_read=0 rows_written=0 calls=0"');
		expectError(await call("GET", "/users/a/b/c", { secret: admin.secret }), 404, 404101);
	});

	it("answers 405 naming the allowed methods for a known path", async () => {
		const res = await call("PUT", "/users");
		expectError(res, 405, 405101);
		expect(res.headers.get("allow")).toBe("POST, GET");
	});

	it("answers 413 for a declared body over 64 KiB before authenticating", async () => {
		const res = await call("POST", "/users", { body: JSON.stringify({ name: "x".repeat(70_000) }) });
		expectError(res, 413, 413101);
	});

	it("answers 413 for a streamed body over 64 KiB without a content-length", async () => {
		const chunk = new TextEncoder().encode("x".repeat(16 * 1024));
		const stream = new ReadableStream({
			start(controller) {
				for (let i = 0; i < 5; i++) controller.enqueue(chunk);
				controller.close();
			},
		});
		const request = new Request(`${BASE}/users`, { method: "POST", body: stream, duplex: "half" } as RequestInit);
		expect(request.headers.get("content-length")).toBeNull();
		const response = await fetchWithEnv(request, {});
		expect(response.status).toBe(413);
		expect(await response.json()).toMatchObject({ subcode: 413101 });
	});

	it("accepts a body of exactly 64 KiB as far as size goes", async () => {
		const admin = await bootstrap();
		const padding = 64 * 1024 - JSON.stringify({ name: "" }).length;
		const res = await call("POST", "/users", { secret: admin.secret, body: { name: "n".repeat(padding) } });
		expectError(res, 400, 400101);
		expect(res.body.details[0].path).toBe("name");
	});

	it("answers 400 for malformed JSON", async () => {
		const admin = await bootstrap();
		expectError(await call("POST", "/users", { secret: admin.secret, body: "{not json" }), 400, 400102);
	});

	it("answers 400 for a body that is JSON but not an object, and takes no body as an empty one", async () => {
		const admin = await bootstrap();
		for (const body of ["null", "[]", "3"]) {
			expectError(await call("PATCH", `/users/${admin.user}`, { secret: admin.secret, body }), 400, 400101);
			expectError(await call("POST", `/users/${admin.user}/secrets`, { secret: admin.secret, body }), 400, 400101);
		}
		expect((await call("POST", `/users/${admin.user}/secrets`, { secret: admin.secret })).status).toBe(201);
	});

	it("says what a missing or mistyped field must be", async () => {
		// The messages are zod's configuration (src/base/validation.ts), loaded with the first
		// request that validates rather than with the isolate.
		const admin = await bootstrap();
		const missing = await call("POST", "/users", { secret: admin.secret, body: { role: admin.role } });
		expectError(missing, 400, 400101);
		expect(missing.body.details).toEqual([{ path: "name", message: "Required: a string" }]);
		const mistyped = await call("POST", "/users", { secret: admin.secret, body: { name: 7, role: admin.role } });
		expect(mistyped.body.details).toEqual([{ path: "name", message: "Must be a string, not a number" }]);
	});

	it("reports each unknown field by name", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "n", role: admin.role, colour: 1, size: 2 },
		});
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([
			{ path: "colour", message: "Unknown field" },
			{ path: "size", message: "Unknown field" },
		]);
	});

	it("turns an unexpected failure into a generic 500 with a trace", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const request = new Request(`${BASE}/whoami`, { headers: { authorization: admin.secret } });
		const response = await fetchWithEnv(request, onShardOf(admin.account, undefined));
		expect(response.status).toBe(500);
		const body = await response.json();
		expect(body).toEqual({
			subcode: 500101,
			code: "internal",
			trace: response.headers.get("x-request-id"),
			description: "Internal error",
		});
		// The log has what the answer leaves out, under the same trace.
		expect(logged).toHaveBeenCalledWith(expect.stringContaining(`"trace":"${response.headers.get("x-request-id")}"`));
	});
});

describe("the envelope's code", () => {
	it("names the refusal with the catalogue's string code, and says what was refused in the caller's terms", async () => {
		const admin = await bootstrap();
		const cannotStream = await userWith(admin, { effect: "allow", actions: ["create_stream_token", "who_am_i"] });
		const stream = await call("GET", "/notifications/stream?topics=vans", { secret: cannotStream.secret });
		expect(stream.body).toMatchObject({ subcode: 403101, code: "operation_forbidden" });
		expect(stream.body.description).toContain("stream_notifications");
		const token = await call("POST", "/notifications/stream/tokens", { secret: cannotStream.secret, body: {} });
		expect(token.body).toMatchObject({ subcode: 403101, code: "operation_forbidden" });
		expect(token.body.description).toContain("stream_notifications");
		expect((await call("GET", `/twins/${crypto.randomUUID()}`, { secret: admin.secret })).body).toMatchObject({
			subcode: 404102,
			code: "not_found",
		});
	});
});

describe("hostile bodies", () => {
	it("refuses JSON nested deeper than 64 levels with a 400", async () => {
		const admin = await bootstrap();
		const nested = (n: number) =>
			`{"name":"x","role":"${admin.role}","description":{"a":${"[".repeat(n)}${"]".repeat(n)}}}`;
		expect((await call("POST", "/users", { secret: admin.secret, body: nested(60) })).status).toBe(201);
		const deep = await call("POST", "/users", { secret: admin.secret, body: nested(20_000) });
		expectError(deep, 400, 400101);
		expect(deep.body.details).toEqual([{ path: "body", message: expect.stringContaining("64") }]);
	});
});

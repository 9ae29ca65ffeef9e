import { describe, expect, it } from "vitest";
import {
	createClient,
	ERRORS,
	retryAfterMs,
	retryingFetch,
	sha256Hex,
	StreamClosedError,
	SUBCODES,
	TwinRegistryError,
	userTokenCredential,
	type WebSocketLike,
} from "../../client/src/index";

// The typed client's helpers, each against a fake fetch (or a fake WebSocket): what it sends,
// and what it makes of the answers.
const BASE = "https://registry.example.com";
const TWIN = "c7e9b4a6-6f1d-4c51-9d9e-0a1b2c3d4e5f";
const HANDLER = "494c1d6d-677f-4627-ae73-13a92c7b996e";
const json = (body: unknown, status = 200, headers: Record<string, string> = {}) =>
	new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });
const envelope = (code: keyof typeof ERRORS) => ({
	subcode: ERRORS[code].subcode,
	trace: "trace-1",
	description: ERRORS[code].description,
	code,
});

// A fetch that answers each request with the next of `answers` (a Response, an error to throw,
// or a function of the request), and records what it was sent.
function scripted(...answers: (Response | Error | ((request: Request) => Response | Promise<Response>))[]) {
	const sent: { request: Request; body: string }[] = [];
	const fetch = async (request: Request) => {
		sent.push({ request, body: await request.clone().text() });
		const answer = answers.shift();
		if (answer === undefined) throw new Error(`unexpected ${request.method} ${request.url}`);
		if (answer instanceof Error) throw answer;
		return typeof answer === "function" ? answer(request) : answer;
	};
	return { sent, fetch };
}

describe("TwinRegistryError and the subcodes", () => {
	it("names every subcode of the catalogue", () => {
		expect(SUBCODES.idempotency_in_flight).toBe(409107);
		expect(Object.keys(SUBCODES)).toEqual(Object.keys(ERRORS));
	});

	it("carries the answer's code when it has one", async () => {
		const registry = createClient({
			baseUrl: BASE,
			credential: "secret",
			fetch: scripted(json(envelope("not_found"), 404)).fetch,
		});
		const error = await registry.get("/twins/{twin}", { params: { path: { twin: TWIN } } }).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(TwinRegistryError);
		expect(error).toMatchObject({ status: 404, subcode: 404102, code: "not_found", trace: "trace-1" });
		expect((error as TwinRegistryError).is("not_found")).toBe(true);
	});

	it("leaves code out of an answer without one", async () => {
		const { code, ...older } = envelope("not_found");
		const registry = createClient({ baseUrl: BASE, fetch: scripted(json(older, 404)).fetch });
		const error = (await registry.get("/whoami").catch((e: unknown) => e)) as TwinRegistryError;
		expect([error.subcode, error.code, code]).toEqual([404102, undefined, "not_found"]);
	});
});

describe("the credential", () => {
	it("is read for each request when it is a function", async () => {
		let n = 0;
		const { sent, fetch } = scripted(json({}), json({}));
		const registry = createClient({ baseUrl: BASE, credential: () => `Bearer t${++n}`, fetch });
		await registry.get("/whoami");
		await registry.get("/whoami");
		expect(sent.map(({ request }) => request.headers.get("authorization"))).toEqual(["Bearer t1", "Bearer t2"]);
	});
});

describe("retries with an Idempotency-Key", () => {
	const waits: number[] = [];
	const sleep = async (ms: number) => void waits.push(ms);
	const retry = { sleep, baseDelayMs: 100, key: () => "key-1" };

	it("send one key for every attempt of a POST, after a network failure, a 503 and a 409107", async () => {
		waits.length = 0;
		const { sent, fetch } = scripted(
			new TypeError("fetch failed"),
			json(envelope("internal"), 503, { "retry-after": "2" }),
			json(envelope("idempotency_in_flight"), 409, { "retry-after": "1" }),
			json({ uuid: TWIN }, 201),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch, retry });
		const twin = await registry.post("/twins", { body: { description: { serial: "A-1" } } });
		expect(twin.uuid).toBe(TWIN);
		expect(sent.map(({ request }) => request.headers.get("idempotency-key"))).toEqual([
			"key-1",
			"key-1",
			"key-1",
			"key-1",
		]);
		expect(sent.map(({ body }) => body)).toEqual(Array(4).fill('{"description":{"serial":"A-1"}}'));
		// Retry-After when the answer has one, else a backoff between half and all of 100 ms.
		expect(waits.slice(1)).toEqual([2000, 1000]);
		expect(waits[0]).toBeGreaterThanOrEqual(50);
		expect(waits[0]).toBeLessThanOrEqual(100);
	});

	it("give each logical request its own key, and keep one the caller set", async () => {
		let n = 0;
		const { sent, fetch } = scripted(json({}, 201), json({}, 201), json({}));
		const registry = createClient({ baseUrl: BASE, fetch, retry: { key: () => `k${++n}` } });
		await registry.post("/twins", { body: {} });
		await registry.post("/twins", { body: {}, headers: { "Idempotency-Key": "mine" } });
		await registry.get("/whoami");
		expect(sent.map(({ request }) => request.headers.get("idempotency-key"))).toEqual(["k1", "mine", null]);
	});

	it("stop at an answer that decided, and after the last retry", async () => {
		const conflict = scripted(json(envelope("idempotency_mismatch"), 422), json({}));
		expect(
			await retryingFetch(conflict.fetch, { sleep })(new Request(`${BASE}/twins`, { method: "POST", body: "{}" })).then(
				(r) => r.status,
			),
		).toBe(422);
		expect(conflict.sent).toHaveLength(1);
		const down = scripted(...Array.from({ length: 3 }, () => json(envelope("internal"), 500)));
		expect(
			await retryingFetch(down.fetch, { sleep, retries: 2 })(
				new Request(`${BASE}/twins`, { method: "POST", body: "{}" }),
			).then((r) => r.status),
		).toBe(500);
		expect(down.sent).toHaveLength(3);
	});

	it("read Retry-After as seconds or a date", () => {
		expect(retryAfterMs("3")).toBe(3000);
		expect(retryAfterMs(new Date(10_000).toUTCString(), 4000)).toBe(6000);
		expect(retryAfterMs(null)).toBeUndefined();
	});
});

describe("userTokenCredential", () => {
	it("refreshes the token before validity_ts, once for concurrent requests, and keeps the new one", async () => {
		let now = 1_000_000_000;
		const kept: string[] = [];
		const { sent, fetch } = scripted(json({ token: "t2", validity_ts: now / 1000 + 7200 }, 201));
		const credential = userTokenCredential({
			baseUrl: BASE,
			token: { token: "t1", validity_ts: now / 1000 + 3600 },
			fetch,
			now: () => now,
			onRefresh: (t) => kept.push(t.token),
		});
		expect(await credential()).toBe("Bearer t1");
		now += (3600 - 299) * 1000; // inside the 300 s before validity_ts
		expect(await Promise.all([credential(), credential()])).toEqual(["Bearer t2", "Bearer t2"]);
		expect(sent).toHaveLength(1);
		expect([
			sent[0].request.method,
			sent[0].request.url,
			sent[0].request.headers.get("authorization"),
			sent[0].body,
		]).toEqual(["POST", `${BASE}/token/refresh`, "Bearer t1", "{}"]);
		expect(kept).toEqual(["t2"]);
		expect(credential.current.token).toBe("t2");
	});

	it("uses the token while it works when a refresh fails, and throws once it has ended", async () => {
		let now = 0;
		const { fetch } = scripted(
			json(envelope("credential_forbidden"), 403),
			json(envelope("credential_forbidden"), 403),
		);
		const credential = userTokenCredential({
			baseUrl: BASE,
			token: { token: "t1", validity_ts: 1000 },
			fetch,
			now: () => now,
		});
		now = 900_000;
		expect(await credential()).toBe("Bearer t1");
		now = 1_000_000;
		await expect(credential()).rejects.toMatchObject({ subcode: 403105 });
	});

	it("stops refreshing once a refresh gains no time", async () => {
		let now = 0;
		const { sent, fetch } = scripted(json({ token: "t2", validity_ts: 1000 }, 201));
		const credential = userTokenCredential({
			baseUrl: BASE,
			token: { token: "t1", validity_ts: 1000 },
			fetch,
			now: () => now,
		});
		now = 800_000;
		expect(await credential()).toBe("Bearer t2");
		expect(await credential()).toBe("Bearer t2");
		expect(sent).toHaveLength(1);
	});
});

// A body that sends `chunks`, then stays open until cancelled (or ends, with `end`).
function sseBody(chunks: string[], end = false) {
	const encoder = new TextEncoder();
	return new ReadableStream<Uint8Array>({
		start(controller) {
			for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
			if (end) controller.close();
		},
	});
}
const sse = (body: ReadableStream<Uint8Array>) =>
	new Response(body, { headers: { "content-type": "text/event-stream" } });
const message = (id: number, value: number) =>
	`id: ${id}\nevent: ledger.entry.updated\ndata: {"type":"Notification","trigger":"ledger.entry.updated","twin":"${TWIN}","event":{"p":{"new_value":${value}}},"topic":"alerts"}\n\n`;

describe("stream over Server-Sent Events", () => {
	it("yields parsed events, resumes with Last-Event-ID after a disconnection, and closes", async () => {
		const { sent, fetch } = scripted(
			sse(
				sseBody(
					["retry: 2000\n\n", ": hb\n\n", message(1, 4.2).slice(0, 30), message(1, 4.2).slice(30), message(2, 4.7)],
					true,
				),
			),
			sse(sseBody(["retry: 2000\r\n\r\n", 'id: 9\nevent: resync\ndata: {"type":"Resync"}\n\n', message(10, 5)])),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const stream = registry.stream({ topics: ["alerts", "vans"], since: "0", reconnect: { delayMs: 0 } });
		const seen: unknown[] = [];
		for await (const event of stream) {
			seen.push([event.id, event.event, event.data.type === "Notification" ? event.data.event : event.data]);
			if (event.id === "10") stream.close();
		}
		expect(seen).toEqual([
			["1", "ledger.entry.updated", { p: { new_value: 4.2 } }],
			["2", "ledger.entry.updated", { p: { new_value: 4.7 } }],
			["9", "resync", { type: "Resync" }],
			["10", "ledger.entry.updated", { p: { new_value: 5 } }],
		]);
		expect(stream.lastEventId).toBe("10");
		const [first, second] = sent.map(({ request }) => request);
		expect([first.url, first.headers.get("authorization"), first.headers.get("last-event-id")]).toEqual([
			`${BASE}/notifications/stream?topics=alerts%2Cvans&since=0`,
			"secret",
			null,
		]);
		expect([second.url, second.headers.get("last-event-id")]).toEqual([
			`${BASE}/notifications/stream?topics=alerts%2Cvans`,
			"2",
		]);
	});

	it("reconnects after an end the service announced, and throws a refused reconnection", async () => {
		const { sent, fetch } = scripted(
			sse(sseBody([message(3, 1), 'event: end\ndata: {"code":1012,"reason":"restart"}\n\n'], true)),
			json(envelope("operation_forbidden"), 403),
		);
		const stream = createClient({ baseUrl: BASE, credential: "secret", fetch }).stream({
			topics: ["alerts"],
			reconnect: { delayMs: 0 },
		});
		const ids: string[] = [];
		const error = await (async () => {
			for await (const event of stream) ids.push(event.id);
		})().catch((e: unknown) => e);
		expect(ids).toEqual(["3"]);
		expect(error).toMatchObject({ name: "TwinRegistryError", subcode: 403101 });
		expect(sent[1].request.headers.get("last-event-id")).toBe("3");
	});

	it("ends for good on 4409, and retries a 503", async () => {
		const { sent, fetch } = scripted(
			json(envelope("internal"), 503),
			sse(sseBody(['event: end\ndata: {"code":4409,"reason":"newer stream"}\n\n'], true)),
		);
		const stream = createClient({ baseUrl: BASE, fetch }).stream({
			topics: ["alerts"],
			reconnect: { delayMs: 0, maxDelayMs: 0 },
		});
		const error = await (async () => {
			for await (const _ of stream);
		})().catch((e: unknown) => e);
		expect(error).toBeInstanceOf(StreamClosedError);
		expect(error).toMatchObject({ code: 4409, reason: "newer stream" });
		expect(sent).toHaveLength(2);
	});

	it("stops when closed while waiting for an event", async () => {
		const { fetch } = scripted(sse(sseBody([])));
		const stream = createClient({ baseUrl: BASE, fetch }).stream({ topics: ["alerts"] });
		const next = stream[Symbol.asyncIterator]().next();
		setTimeout(() => stream.close(), 10);
		expect(await next).toEqual({ done: true, value: undefined });
	});
});

// A WebSocket the test drives: each one made is kept, with the URL and what was sent on it.
function fakeWebSockets() {
	const sockets: (WebSocketLike & {
		url: string;
		sent: string[];
		server: { open(): void; send(frame: unknown): void; close(code: number, reason?: string): void };
	})[] = [];
	class FakeWebSocket implements WebSocketLike {
		readyState = 0;
		onopen: WebSocketLike["onopen"] = null;
		onmessage: WebSocketLike["onmessage"] = null;
		onclose: WebSocketLike["onclose"] = null;
		onerror: WebSocketLike["onerror"] = null;
		sent: string[] = [];
		url: string;
		server = {
			open: () => {
				this.readyState = 1;
				this.onopen?.({});
			},
			send: (frame: unknown) => this.onmessage?.({ data: typeof frame === "string" ? frame : JSON.stringify(frame) }),
			close: (code: number, reason = "") => {
				this.readyState = 3;
				this.onclose?.({ code, reason });
			},
		};
		constructor(url: string) {
			this.url = url;
			sockets.push(this);
		}
		send(data: string) {
			this.sent.push(data);
		}
		close(code = 1000) {
			if (this.readyState < 2) this.server.close(code);
		}
	}
	return { sockets, WebSocket: FakeWebSocket };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("stream over a WebSocket", () => {
	it("opens with a stream token, acknowledges what it yielded, and resumes with since after a close", async () => {
		const { sockets, WebSocket } = fakeWebSockets();
		const { sent, fetch } = scripted(
			json({ token: "st1", validity_ts: 1 }, 201),
			json({ token: "st2", validity_ts: 1 }, 201),
		);
		const stream = createClient({ baseUrl: "http://127.0.0.1:8787", credential: "secret", fetch }).stream({
			topics: ["alerts"],
			transport: "websocket",
			WebSocket,
			reconnect: { delayMs: 0 },
		});
		const events = stream[Symbol.asyncIterator]();
		const first = events.next();
		await tick();
		sockets[0].server.open();
		sockets[0].server.send({
			id: "1",
			event: "ledger.entry.added",
			data: { type: "Notification", trigger: "ledger.entry.added" },
		});
		sockets[0].server.send("pong");
		expect((await first).value).toMatchObject({ id: "1", event: "ledger.entry.added" });
		const second = events.next();
		await tick();
		expect(sockets[0].sent).toEqual(['{"type":"ack","id":"1"}']);
		sockets[0].server.close(1006);
		await tick();
		await tick();
		sockets[1].server.open();
		sockets[1].server.send({ id: "2", event: "ledger.entry.updated", data: { type: "Notification" } });
		expect((await second).value).toMatchObject({ id: "2" });
		stream.close();
		expect(await events.next()).toEqual({ done: true, value: undefined });
		expect(sockets.map((s) => s.url)).toEqual([
			"ws://127.0.0.1:8787/notifications/stream?topics=alerts&access_token=st1",
			"ws://127.0.0.1:8787/notifications/stream?topics=alerts&since=1&access_token=st2",
		]);
		expect(
			sent.map(({ request }) => [request.method, new URL(request.url).pathname, request.headers.get("authorization")]),
		).toEqual([
			["POST", "/notifications/stream/tokens", "secret"],
			["POST", "/notifications/stream/tokens", "secret"],
		]);
	});

	it("tells why a handshake was refused, by asking over HTTP", async () => {
		const { sockets, WebSocket } = fakeWebSockets();
		const { fetch } = scripted(json({ token: "st1", validity_ts: 1 }, 201), json(envelope("topic_not_granted"), 403));
		const stream = createClient({ baseUrl: BASE, fetch }).stream({
			topics: ["alerts"],
			account: TWIN,
			transport: "websocket",
			WebSocket,
		});
		const next = stream[Symbol.asyncIterator]().next();
		await tick();
		sockets[0].server.close(1006);
		await expect(next).rejects.toMatchObject({ subcode: 403104 });
	});

	it("says what to do where there is no WebSocket", async () => {
		const stream = createClient({ baseUrl: BASE, fetch: scripted().fetch }).stream({
			topics: ["alerts"],
			transport: "websocket",
		});
		const original = globalThis.WebSocket;
		Object.defineProperty(globalThis, "WebSocket", { value: undefined, configurable: true, writable: true });
		try {
			await expect(stream[Symbol.asyncIterator]().next()).rejects.toThrow(/Node 20 has no global WebSocket/);
		} finally {
			Object.defineProperty(globalThis, "WebSocket", { value: original, configurable: true, writable: true });
		}
	});
});

describe("queryTimeseries", () => {
	const PATH = `${BASE}/account/services/timeseries/temperatures/data`;
	const COLUMNS = ["_timestamp", "celsius.count", "celsius.avg"];

	it("sends the typed query, follows the cursor to a null one, and answers each page as it came", async () => {
		const first = { cursor: "c1", resolution: "1m", columns: COLUMNS, rows: [[1795811400, 2, 21.75]] };
		// A page may hold no rows while more follow.
		const second = { cursor: "c2", resolution: "1m", columns: COLUMNS, rows: [] };
		const last = { cursor: null, resolution: "1m", columns: COLUMNS, rows: [[1795811460, 1, 22.5]] };
		const { sent, fetch } = scripted(json(first), json(second), json(last));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const pages = [];
		for await (const page of registry.queryTimeseries("temperatures", {
			ge: 1795811400,
			le: 1795811700,
			step: "1m",
			aggregates: "count,avg",
			fill: "none",
			count: 2,
			consistent: true,
		})) {
			const {
				cursor,
				resolution,
				columns,
				rows,
			}: { cursor: string | null; resolution: string; columns: string[]; rows: unknown[][] } = page;
			pages.push({ cursor, resolution, columns, rows });
		}
		expect(pages).toEqual([first, second, last]);
		const query = "ge=1795811400&le=1795811700&step=1m&aggregates=count%2Cavg&fill=none&count=2&consistent=true";
		expect(sent.map(({ request }) => [request.method, request.url, request.headers.get("authorization")])).toEqual([
			["GET", `${PATH}?${query}`, "secret"],
			["GET", `${PATH}?${query}&cursor=c1`, "secret"],
			["GET", `${PATH}?${query}&cursor=c2`, "secret"],
		]);
	});

	it("throws a refusal of any page as a TwinRegistryError", async () => {
		const { fetch } = scripted(
			json({ cursor: "c1", resolution: "raw", columns: ["_timestamp", "twin", "celsius"], rows: [] }),
			json(envelope("invalid_cursor"), 400),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const walk = async () => {
			for await (const _ of registry.queryTimeseries("temperatures", { ge: 0, le: 60 }));
		};
		await expect(walk()).rejects.toMatchObject({ status: 400, subcode: 400104, code: "invalid_cursor" });
	});

	it("takes only the parameters the document gives the operation, with their types", () => {
		const { sent, fetch } = scripted();
		const registry = createClient({ baseUrl: BASE, fetch });
		// @ts-expect-error ge is a number of seconds
		registry.queryTimeseries("temperatures", { ge: "2026-11-27T20:30:00Z", le: 1795811700 });
		// @ts-expect-error fill is one of none, null, previous, linear
		registry.queryTimeseries("temperatures", { ge: 0, le: 60, step: "1m", fill: "zero" });
		// @ts-expect-error the helper gives the cursor itself
		registry.queryTimeseries("temperatures", { ge: 0, le: 60, cursor: "c1" });
		// Nothing is sent until a page is asked for.
		expect(sent).toEqual([]);
	});
});

describe("uploadDoc", () => {
	const bytes = new TextEncoder().encode("hello world");
	const HASH = "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9";

	it("computes the SHA-256 with WebCrypto", async () => {
		expect(await sha256Hex(bytes)).toBe(HASH);
	});

	it("gets an upload URL, PUTs the bytes there without the credential, and attaches them with their hash", async () => {
		const record = {
			creation_certificate: { size: 11, hash: HASH, created_ts: 1, creator: TWIN },
			storage_class: "access_optimized",
			updated_ts: 1,
			status: "ok",
		};
		const url = `${BASE}/cache/acct/${HANDLER}?token=abc`;
		const { sent, fetch } = scripted(
			json({ handler: HANDLER, url, validity_ts: 1 }, 201),
			json({ handler: HANDLER, size: 11, hash: HASH }),
			json({ docs: { "notes.txt": record } }, 201),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const doc = await registry.uploadDoc({
			twin: TWIN,
			name: "notes.txt",
			body: new Blob([bytes], { type: "text/plain" }),
			description: { lang: "en" },
		});
		expect(doc).toEqual(record);
		const [create, put, attach] = sent;
		expect([create.request.method, create.request.url, create.body]).toEqual(["POST", `${BASE}/cache`, "{}"]);
		expect([
			put.request.method,
			put.request.url,
			put.request.headers.get("authorization"),
			put.request.headers.get("content-type"),
			put.request.headers.get("content-length"),
			put.body,
		]).toEqual(["PUT", url, null, "text/plain", "11", "hello world"]);
		expect([attach.request.method, attach.request.url, attach.request.headers.get("authorization")]).toEqual([
			"POST",
			`${BASE}/twins/${TWIN}/docs`,
			"secret",
		]);
		expect(JSON.parse(attach.body)).toEqual({
			docs: { "notes.txt": { handler: HANDLER, hash: HASH, description: { lang: "en" } } },
		});
	});

	it("lets go of the upload URL when the attach is refused", async () => {
		const { sent, fetch } = scripted(
			json({ handler: HANDLER, url: `${BASE}/cache/a/${HANDLER}?token=t`, validity_ts: 1 }, 201),
			json({ handler: HANDLER, size: 11, hash: HASH }),
			json(envelope("twin_doc_limit"), 409),
			json({ handler: HANDLER }),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		await expect(registry.uploadDoc({ twin: TWIN, name: "notes.txt", body: bytes })).rejects.toMatchObject({
			subcode: 409175,
		});
		expect([sent[3].request.method, sent[3].request.url]).toEqual(["DELETE", `${BASE}/cache/${HANDLER}`]);
		expect(sent[1].request.headers.get("content-type")).toBe("application/octet-stream");
	});
});

// A batch's record as get_batch answers it, at a status and progress.
const BATCH = "0190a3b4-1c2d-8e3f-9a4b-5c6d7e8f9a0b";
function batchRecord(status: string, done = 0, extra: Record<string, unknown> = {}) {
	return {
		batch: BATCH,
		status,
		operation: "create_twin",
		user: HANDLER,
		hash: "ab".repeat(32),
		created_ts: 1,
		updated_ts: 1 + done,
		expires_ts: null,
		progress: { lines: 3, done, succeeded: done, failed: 0 },
		...extra,
	};
}

describe("createBatch", () => {
	const lines = [
		{ body: { description: { site: "north" } } },
		{ query: { details: true }, body: { description: { site: "süd" } } },
	];
	const text = `${JSON.stringify(lines[0])}\n${JSON.stringify(lines[1])}\n`;

	it("uploads the lines as NDJSON without the credential, then creates the batch with their SHA-256", async () => {
		const url = `${BASE}/cache/acct/${HANDLER}?token=abc`;
		const created = batchRecord("new");
		const { sent, fetch } = scripted(
			json({ handler: HANDLER, url, validity_ts: 1 }, 201),
			json({ handler: HANDLER, size: 0, hash: "" }),
			json(created, 201),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const batch = await registry.createBatch({
			operation: "create_twin",
			lines,
			description: { purpose: "onboarding" },
		});
		expect(batch).toEqual(created);
		const [cache, put, create] = sent;
		expect([cache.request.method, cache.request.url, cache.request.headers.get("authorization"), cache.body]).toEqual([
			"POST",
			`${BASE}/cache`,
			"secret",
			"{}",
		]);
		expect([
			put.request.method,
			put.request.url,
			put.request.headers.get("authorization"),
			put.request.headers.get("content-type"),
			put.request.headers.get("content-length"),
			put.body,
		]).toEqual(["PUT", url, null, "application/x-ndjson", String(new TextEncoder().encode(text).length), text]);
		expect([create.request.method, create.request.url, create.request.headers.get("authorization")]).toEqual([
			"POST",
			`${BASE}/batches`,
			"secret",
		]);
		expect(JSON.parse(create.body)).toEqual({
			operation: "create_twin",
			handler: HANDLER,
			hash: await sha256Hex(new TextEncoder().encode(text)),
			description: { purpose: "onboarding" },
		});
	});

	it("takes NDJSON text as it is", async () => {
		const own = '{"body":{}}\n{"body":{"description":{"a":1}}}';
		const { sent, fetch } = scripted(
			json({ handler: HANDLER, url: `${BASE}/cache/a/${HANDLER}?token=t`, validity_ts: 1 }, 201),
			json({ handler: HANDLER }),
			json(batchRecord("new"), 201),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		await registry.createBatch({ operation: "create_twin", lines: own });
		expect(sent[1].body).toBe(own);
		expect(JSON.parse(sent[2].body)).toEqual({
			operation: "create_twin",
			handler: HANDLER,
			hash: await sha256Hex(new TextEncoder().encode(own)),
		});
	});

	it("creates a batch of the twins a rule selects in one request, with no upload", async () => {
		const created = batchRecord("new", 0, {
			operation: "update_twin",
			hash: null,
			twins: { match: "TWIN.site == 'north'" },
		});
		const { sent, fetch } = scripted(json(created, 201));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const batch = await registry.createBatch({
			operation: "update_twin",
			twins: { match: "TWIN.site == 'north'" },
			template: { body: { description: { checked: true } } },
		});
		expect(batch).toEqual(created);
		expect(sent.map(({ request }) => [request.method, request.url])).toEqual([["POST", `${BASE}/batches`]]);
		expect(JSON.parse(sent[0].body)).toEqual({
			operation: "update_twin",
			twins: { match: "TWIN.site == 'north'" },
			template: { body: { description: { checked: true } } },
		});
	});

	it("throws a refused create as a TwinRegistryError and lets go of the upload URL", async () => {
		const { sent, fetch } = scripted(
			json({ handler: HANDLER, url: `${BASE}/cache/a/${HANDLER}?token=t`, validity_ts: 1 }, 201),
			json({ handler: HANDLER }),
			json(envelope("active_jobs_limit"), 409),
			json({ handler: HANDLER }),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const error = await registry.createBatch({ operation: "create_twin", lines }).catch((e: unknown) => e);
		expect(error).toBeInstanceOf(TwinRegistryError);
		expect(error).toMatchObject({ status: 409, subcode: 409231, code: "active_jobs_limit" });
		expect([sent[3].request.method, sent[3].request.url]).toEqual(["DELETE", `${BASE}/cache/${HANDLER}`]);
	});

	it("takes either lines or twins with a template, not both", () => {
		const registry = createClient({ baseUrl: BASE, fetch: scripted().fetch });
		const both = { operation: "create_twin", lines, twins: { match: "true" }, template: {} };
		// @ts-expect-error a batch is of a file or of a selection
		void (() => registry.createBatch(both));
		// @ts-expect-error a selection needs its template
		void (() => registry.createBatch({ operation: "update_twin", twins: { match: "true" } }));
	});
});

describe("followBatch", () => {
	const PATH = `${BASE}/batches/${BATCH}`;

	it("reads the record until it ends, yielding it when its status or progress changed, the last one too", async () => {
		const { sent, fetch } = scripted(
			json(batchRecord("new")),
			json(batchRecord("processing", 1)),
			json(batchRecord("processing", 1)),
			json(batchRecord("processing", 2)),
			json(batchRecord("completed", 3, { results: { url: `${BASE}/files/a/h`, validity_ts: 9 } })),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const seen = [];
		for await (const batch of registry.followBatch(BATCH, { intervalMs: 0 }))
			seen.push([batch.status, batch.progress.done]);
		expect(seen).toEqual([
			["new", 0],
			["processing", 1],
			["processing", 2],
			["completed", 3],
		]);
		expect(sent.map(({ request }) => [request.method, request.url, request.headers.get("authorization")])).toEqual(
			Array(5).fill(["GET", PATH, "secret"]),
		);
	});

	it.each(["hash_mismatch", "validation_failed", "cancelled"])("ends at %s", async (status) => {
		const { sent, fetch } = scripted(json(batchRecord(status)));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const seen = [];
		for await (const batch of registry.followBatch(BATCH, { intervalMs: 0 })) seen.push(batch.status);
		expect([seen, sent.length]).toEqual([[status], 1]);
	});

	it("stops when the signal aborts, while it waits, throwing the signal's reason", async () => {
		const { sent, fetch } = scripted(json(batchRecord("processing", 1)));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const controller = new AbortController();
		const follow = registry
			.followBatch(BATCH, { intervalMs: 60_000, signal: controller.signal })
			[Symbol.asyncIterator]();
		expect((await follow.next()).value).toMatchObject({ status: "processing" });
		const next = follow.next();
		controller.abort(new Error("enough"));
		await expect(next).rejects.toThrow("enough");
		expect(sent).toHaveLength(1);
	});

	it("reads nothing under a signal already aborted", async () => {
		const { sent, fetch } = scripted();
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const walk = async () => {
			for await (const _ of registry.followBatch(BATCH, { signal: AbortSignal.abort() }));
		};
		await expect(walk()).rejects.toMatchObject({ name: "AbortError" });
		expect(sent).toEqual([]);
	});

	it("throws a refused read as a TwinRegistryError", async () => {
		const { fetch } = scripted(json(batchRecord("processing")), json(envelope("not_found"), 404));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const walk = async () => {
			for await (const _ of registry.followBatch(BATCH, { intervalMs: 0 }));
		};
		const error = await walk().catch((e: unknown) => e);
		expect(error).toBeInstanceOf(TwinRegistryError);
		expect(error).toMatchObject({ status: 404, subcode: 404102 });
	});
});

describe("batchResults", () => {
	const url = `${BASE}/files/acct/handler-1`;
	const ended = batchRecord("completed", 3, { results: { url, validity_ts: 9 } });
	const results = [
		{ line: 1, status: 201, body: { uuid: TWIN, description: { site: "süd" } } },
		{ line: 2, twin: TWIN, status: 404, subcode: 404102, body: { subcode: 404102, code: "not_found" } },
		{ line: 3, status: 201, body: null },
	];
	// The bytes in chunks cut anywhere: inside a line, inside a character, at a line's end.
	function chunked(bytes: Uint8Array, cuts: number[], onCancel?: () => void) {
		let at = 0;
		return new ReadableStream<Uint8Array>({
			pull(controller) {
				const end = cuts.shift() ?? bytes.length;
				controller.enqueue(bytes.slice(at, end));
				at = end;
				if (at >= bytes.length) controller.close();
			},
			cancel: onCancel,
		});
	}

	it("downloads the results URL without the credential and parses each line, across chunk boundaries", async () => {
		const bytes = new TextEncoder().encode(results.map((r) => `${JSON.stringify(r)}\n`).join(""));
		const umlaut = bytes.indexOf(0xc3);
		const second = bytes.indexOf(0x0a) + 1;
		const { sent, fetch } = scripted(
			new Response(chunked(bytes, [5, umlaut + 1, second, second + 10]), {
				headers: { "content-type": "application/x-ndjson" },
			}),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const read = [];
		for await (const result of registry.batchResults(ended)) read.push(result);
		expect(read).toEqual(results);
		expect(sent.map(({ request }) => [request.method, request.url, request.headers.get("authorization")])).toEqual([
			["GET", url, null],
		]);
	});

	it("reads a last line without its newline, and cancels the body when the loop stops early", async () => {
		const last = new TextEncoder().encode(results.map((r) => JSON.stringify(r)).join("\n"));
		const whole = scripted(new Response(chunked(last, [3])));
		const read = [];
		for await (const result of createClient({ baseUrl: BASE, fetch: whole.fetch }).batchResults(ended))
			read.push(result);
		expect(read).toEqual(results);

		let cancelled = false;
		const bytes = new TextEncoder().encode(results.map((r) => `${JSON.stringify(r)}\n`).join(""));
		const early = scripted(
			new Response(
				chunked(bytes, [bytes.indexOf(0x0a) + 1], () => {
					cancelled = true;
				}),
			),
		);
		const first = [];
		for await (const result of createClient({ baseUrl: BASE, fetch: early.fetch }).batchResults(ended)) {
			first.push(result.line);
			break;
		}
		expect([first, cancelled]).toEqual([[1], true]);
	});

	it("throws a refused download as a TwinRegistryError, and a batch without results before any request", async () => {
		const { sent, fetch } = scripted(json(envelope("upload_not_found"), 404));
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const walk = async (batch: typeof ended) => {
			for await (const _ of registry.batchResults(batch));
		};
		const refused = await walk(ended).catch((e: unknown) => e);
		expect(refused).toBeInstanceOf(TwinRegistryError);
		expect(refused).toMatchObject({ status: 404, subcode: 404171 });
		await expect(walk(batchRecord("validation_failed"))).rejects.toThrow(/no results while validation_failed/);
		expect(sent).toHaveLength(1);
	});
});

describe("followExport", () => {
	const EXPORT = "0190a3b4-1c2d-8e3f-9a4b-5c6d7e8f9a0c";
	function exportRecord(status: string, scanned = 0, extra: Record<string, unknown> = {}) {
		return {
			export: EXPORT,
			status,
			user: HANDLER,
			contents: ["twins"],
			match: null,
			created_ts: 1,
			updated_ts: 1 + scanned,
			expires_ts: null,
			progress: { twins: 2, scanned, exported: scanned },
			...extra,
		};
	}

	it("creates an export and follows it to completed, yielding each change", async () => {
		const files = { twins: { url: `${BASE}/files/a/t`, validity_ts: 9, lines: 2, bytes: 90 } };
		const { sent, fetch } = scripted(
			json(exportRecord("new"), 201),
			json(exportRecord("new")),
			json(exportRecord("processing", 1)),
			json(exportRecord("completed", 2, { files })),
		);
		const registry = createClient({ baseUrl: BASE, credential: "secret", fetch });
		const created = await registry.createExport({ contents: ["twins"], match: "TWIN.site == 'north'" });
		const seen = [];
		for await (const found of registry.followExport(created.export, { intervalMs: 0 }))
			seen.push([found.status, found.progress.scanned]);
		expect(seen).toEqual([
			["new", 0],
			["processing", 1],
			["completed", 2],
		]);
		expect(sent.map(({ request }) => [request.method, request.url])).toEqual([
			["POST", `${BASE}/exports`],
			...Array(3).fill(["GET", `${BASE}/exports/${EXPORT}`]),
		]);
		expect(JSON.parse(sent[0].body)).toEqual({ contents: ["twins"], match: "TWIN.site == 'north'" });
	});

	it("ends at cancelled, and throws a refused read as a TwinRegistryError", async () => {
		const cancelled = scripted(json(exportRecord("cancelling")), json(exportRecord("cancelled")));
		const seen = [];
		for await (const found of createClient({ baseUrl: BASE, fetch: cancelled.fetch }).followExport(EXPORT, {
			intervalMs: 0,
		}))
			seen.push(found.status);
		expect(seen).toEqual(["cancelling", "cancelled"]);

		const refused = scripted(json(envelope("not_found"), 404));
		const walk = async () => {
			for await (const _ of createClient({ baseUrl: BASE, fetch: refused.fetch }).followExport(EXPORT));
		};
		await expect(walk()).rejects.toBeInstanceOf(TwinRegistryError);
	});
});

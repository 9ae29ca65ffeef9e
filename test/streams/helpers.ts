// Live streams through the Worker, read as a client reads them (SSE and WebSocket, what arrives
// awaited one at a time), entries that publish to topics, messages seeded into the stream outbox,
// and the account's stream object reached directly. A few tests of other features (stickers,
// federation, notifications) open streams or publish through these too.
import { env, exports } from "cloudflare:workers";
import { expect, onTestFinished } from "vitest";
import type { StreamObject } from "../../src/notifications/streams/object";
import type { Account } from "../support/accounts";
import { ledger } from "../support/ledgers";
import { inImplementation } from "../support/objects";
import { BASE, call, fetchWithEnv, randomAddress } from "../support/requests";
import { dbOf } from "../support/shards";

export type StreamEvent = { id?: string; event?: string; data?: any; comment?: string };

// A queue of what arrives, awaited one at a time: `next()` answers the next item, or fails
// after `timeoutMs` naming what it waited for.
class Arrivals<T> {
	private readonly items: T[] = [];
	private readonly waiting: ((item: T) => void)[] = [];

	push(item: T) {
		const waiter = this.waiting.shift();
		if (waiter) waiter(item);
		else this.items.push(item);
	}

	next(what: string, timeoutMs = 5_000): Promise<T> {
		const item = this.items.shift();
		if (item !== undefined) return Promise.resolve(item);
		return new Promise((resolve, reject) => {
			const timer = setTimeout(() => {
				this.waiting.splice(this.waiting.indexOf(waiter), 1);
				reject(new Error(`waited ${timeoutMs} ms for ${what}`));
			}, timeoutMs);
			const waiter = (value: T) => {
				clearTimeout(timer);
				resolve(value);
			};
			this.waiting.push(waiter);
		});
	}

	// What has arrived and not been taken.
	get pending(): readonly T[] {
		return this.items;
	}
}

type StreamOptions = { secret?: string; headers?: Record<string, string>; env?: Partial<Record<keyof Env, unknown>> };

function streamRequest(path: string, options: StreamOptions, websocket: boolean) {
	const headers = new Headers(options.headers);
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	if (options.secret) headers.set("authorization", options.secret);
	if (websocket) headers.set("upgrade", "websocket");
	const request = new Request(BASE + path, { headers });
	return options.env ? fetchWithEnv(request, options.env) : exports.default.fetch(request);
}

// An SSE stream through the Worker, read as a client reads it: events (id, event, parsed data)
// and comments in order, `text` all the bytes so far, `ended` once the body ends. With `paused`,
// nothing is read until `resume()`: a reader that does not keep up.
export async function openSse(path: string, options: StreamOptions & { paused?: boolean } = {}) {
	const res = await streamRequest(path, options, false);
	const arrivals = new Arrivals<StreamEvent>();
	let text = "";
	let ended = false;
	let resume!: () => void;
	const resumed = new Promise<void>((resolve) => (resume = resolve));
	if (!options.paused) resume();
	const reader = res.body!.getReader();
	const done = (async () => {
		await resumed;
		const decoder = new TextDecoder();
		let buffer = "";
		for (;;) {
			const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
			if (chunk.done) break;
			const part = decoder.decode(chunk.value, { stream: true });
			text += part;
			buffer += part;
			for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
				arrivals.push(parseSse(buffer.slice(0, end)));
				buffer = buffer.slice(end + 2);
			}
		}
		ended = true;
	})();
	return {
		res,
		next: (what = "an SSE event", timeoutMs?: number) => arrivals.next(what, timeoutMs),
		// The next event that is not a comment or the `retry` preamble.
		async event(what = "an SSE event", timeoutMs?: number): Promise<StreamEvent> {
			for (;;) {
				const item = await arrivals.next(what, timeoutMs);
				if (item.comment === undefined && (item.event !== undefined || item.data !== undefined)) return item;
			}
		},
		get pending() {
			return arrivals.pending.filter((item) => item.comment === undefined && item.event !== undefined);
		},
		get text() {
			return text;
		},
		get ended() {
			return ended;
		},
		done,
		resume,
		close: () => reader.cancel().catch(() => undefined),
	};
}

function parseSse(block: string): StreamEvent {
	const out: StreamEvent = {};
	for (const line of block.split("\n")) {
		if (line.startsWith(":")) out.comment = line.slice(1).trim();
		else if (line.startsWith("id: ")) out.id = line.slice(4);
		else if (line.startsWith("event: ")) out.event = line.slice(7);
		else if (line.startsWith("data: ")) out.data = JSON.parse(line.slice(6));
	}
	return out;
}

// A WebSocket stream through the Worker: `next()` answers each frame parsed, `closed` the close
// frame's code and reason. A refusal has no socket: `res` is the JSON answer.
export async function openSocket(path: string, options: StreamOptions = {}) {
	const res = await streamRequest(path, options, true);
	const ws = res.webSocket;
	const arrivals = new Arrivals<any>();
	let resolveClosed!: (value: { code: number; reason: string }) => void;
	const closed = new Promise<{ code: number; reason: string }>((resolve) => (resolveClosed = resolve));
	if (ws) {
		ws.accept();
		ws.addEventListener("message", (event: MessageEvent) =>
			arrivals.push(typeof event.data === "string" && event.data !== "pong" ? JSON.parse(event.data) : event.data),
		);
		ws.addEventListener("close", (event: CloseEvent) => resolveClosed({ code: event.code, reason: event.reason }));
		onTestFinished(() => {
			try {
				ws.close(1000, "test over");
			} catch {}
		});
	}
	return {
		res,
		ws,
		next: (what = "a stream frame", timeoutMs?: number) => arrivals.next(what, timeoutMs),
		get pending() {
			return arrivals.pending;
		},
		closed,
		send: (data: string) => ws!.send(data),
		ack: (id: string) => ws!.send(JSON.stringify({ type: "ack", id })),
	};
}

export const streamPath = (topics: string, query = "") =>
	`/notifications/stream?topics=${topics}${query ? `&${query}` : ""}`;

// An entry that publishes every change to `topics`, written (or, when it exists, updated) on
// `twin`'s personal ledger.
export function publish(secret: string, twin: string, name: string, value: unknown, topics: string[]) {
	return publishEntries(secret, twin, { [name]: value }, topics);
}

// Entries (name to value) that publish every change to `topics`, written in one request, or, when
// they exist, their values updated in one.
export async function publishEntries(secret: string, twin: string, values: Record<string, unknown>, topics: string[]) {
	const publish = Object.fromEntries(topics.map((topic) => [topic, "true"]));
	const entries = (withPublish: boolean) =>
		Object.fromEntries(
			Object.entries(values).map(([name, value]) => [name, withPublish ? { value, publish } : { value }]),
		);
	const added = await call("POST", ledger(twin), { secret, body: { entries: entries(true) } });
	if (added.status === 201) return added;
	const updated = await call("PATCH", ledger(twin, "personal", "/value"), {
		secret,
		body: { entries: entries(false) },
	});
	expect(updated.status, JSON.stringify(updated.body)).toBe(200);
	return updated;
}

// Everything the stream object sent a socket so far: the runtime answers `ping` after every
// frame sent before it (at once, without the object: what an acknowledgement makes the object
// send may come later).
export async function drained(socket: Awaited<ReturnType<typeof openSocket>>) {
	socket.send("ping");
	const frames = [];
	for (;;) {
		const frame = await socket.next("the frames before pong");
		if (frame === "pong") return frames;
		frames.push(frame);
	}
}

// `count` messages of `topic` on `twin`, written into the account's stream outbox as its
// writes would write them (each `bytes` of value or more), and handed to its stream object by
// one real write publishing to `drain-topic`.
export async function seedStreamMessages(admin: Account, twin: string, topic: string, count: number, bytes = 0) {
	const db = dbOf(admin.account);
	const statement = db.prepare(
		"INSERT INTO stream_outbox (account, twin, trigger, topics, entries, at) VALUES (?, ?, ?, ?, ?, ?)",
	);
	const at = Date.now() / 1000;
	const value = "x".repeat(bytes);
	for (let i = 0; i < count; i += 500) {
		const rows = Array.from({ length: Math.min(500, count - i) }, (_, j) =>
			statement.bind(
				admin.account,
				twin,
				"ledger.entry.updated",
				JSON.stringify({ [topic]: ["seeded"] }),
				JSON.stringify({ seeded: { new_value: value ? `${i + j}:${value}` : i + j, old_value: null, changed_ts: at } }),
				at,
			),
		);
		await db.batch(rows);
	}
	await publish(admin.secret, twin, "drain", crypto.randomUUID(), ["drain-topic"]);
}

// Runs `work` on the account's stream object itself (its log's storage, its sockets).
export function inStreamObject<T>(
	account: string,
	work: (instance: StreamObject, state: DurableObjectState) => T | Promise<T>,
) {
	return inImplementation(env.STREAMS.getByName(account), work);
}

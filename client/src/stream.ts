// Live streams (docs/streams.md), read as an async iterator of parsed events over Server-Sent
// Events or a WebSocket, resumed after a disconnection from the last event id: `Last-Event-ID`
// over SSE, `since` over a WebSocket. SSE is read with fetch, so it runs wherever fetch streams a
// body (Node 18 and later, browsers), and sends the credential as a header. A WebSocket needs a
// WebSocket class: the global one (browsers, Node 22 and later; Node 20 has none) or one given as
// an option; it opens with a stream token (POST /notifications/stream/tokens) made for each
// connection, since a browser's WebSocket cannot send a header.
import { TwinRegistryError } from "./error.js";
import { abortableSleep, type Fetch } from "./retry.js";

// A notification message: what the stream's topics published.
export type StreamMessage = {
	type: "Notification";
	trigger: string;
	message: string;
	twin: string;
	event: Record<string, unknown>;
	sent_ts: number;
	topic: string;
	account: string;
};

// One event: a message (`event` its trigger, such as "ledger.entry.updated"), or a resync
// (`event` "resync", data `{type: "Resync"}`): messages after the resume point are gone from the
// log, so re-read what you need through the API; the stream goes on from the resync's id.
export type StreamEvent = { id: string; event: string; data: StreamMessage | { type: "Resync" } };

// The part of the WebSocket API the stream uses: the global WebSocket and the ws package fit it.
export type WebSocketLike = {
	readonly readyState: number;
	onopen: ((event: unknown) => void) | null;
	onmessage: ((event: { data: unknown }) => void) | null;
	onclose: ((event: { code: number; reason: string }) => void) | null;
	onerror: ((event: unknown) => void) | null;
	send(data: string): void;
	close(code?: number, reason?: string): void;
};
export type WebSocketConstructor = new (url: string) => WebSocketLike;

export type StreamOptions = {
	// 1 to 8 topics.
	topics: string[];
	// The publishing account, by default the caller's.
	account?: string;
	// Resume after this event id (a stream already read, say); later connections resume by themselves.
	since?: string;
	// "sse" (the default) or "websocket".
	transport?: "sse" | "websocket";
	// The WebSocket class, by default the global one.
	WebSocket?: WebSocketConstructor;
	// Reconnecting: the wait before the first attempt (the SSE retry field, else 1000 ms), doubled
	// after each failed attempt up to maxDelayMs (30 s); at most `retries` failed attempts in a
	// row (unlimited by default) before the last error is thrown.
	reconnect?: { delayMs?: number; maxDelayMs?: number; retries?: number };
	// Closes the stream as close() does.
	signal?: AbortSignal;
};

// An async iterator of the stream's events, read by one consumer. It ends when closed (close(),
// the signal, or a `break` out of `for await`); it throws a TwinRegistryError when a connection is
// refused other than for a while (401, 403, 409191...), and a StreamClosedError when the service
// closes it for good: 4409 (the same user opened an 11th stream) and 1008 (a frame it refused).
export type NotificationStream = AsyncIterable<StreamEvent> & {
	// The id of the last event yielded: where the next connection resumes.
	readonly lastEventId: string | undefined;
	close(): void;
};

export class StreamClosedError extends Error {
	override readonly name = "StreamClosedError";
	readonly code: number;
	readonly reason: string;
	constructor(code: number, reason: string) {
		super(`The stream was closed with ${code}${reason ? `: ${reason}` : ""}`);
		this.code = code;
		this.reason = reason;
	}
}

// What the client gives a stream: its origin, a fetch that sends the credential, and how to make
// a stream token.
export type StreamConnection = {
	baseUrl: string;
	fetch: Fetch;
	streamToken: () => Promise<string>;
	sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
};

// What a connection yields: events, a new reconnection delay, or the end the service announced
// (a close code); a connection that just stops yields nothing more.
type Frame =
	| { kind: "event"; event: StreamEvent }
	| { kind: "retry"; ms: number }
	| { kind: "end"; code: number; reason: string };
type Opened = { frames: AsyncIterator<Frame>; ack?: (id: string) => void; cancel: () => void };

const FINAL_CODES = new Set([4409, 1008]);

export function openStream(connection: StreamConnection, options: StreamOptions): NotificationStream {
	const controller = new AbortController();
	const sleep = connection.sleep ?? abortableSleep;
	const { delayMs, maxDelayMs = 30_000, retries = Infinity } = options.reconnect ?? {};
	const transport = options.transport ?? "sse";
	let lastEventId = options.since;
	// Whether an event came: until then a given `since` is sent as such (a malformed one is 400101).
	let resumed = false;
	let current: Opened | undefined;
	let iterating = false;
	options.signal?.addEventListener("abort", () => close(), { once: true });
	if (options.signal?.aborted) controller.abort();

	function close() {
		controller.abort();
		current?.cancel();
	}

	function query(extra: Record<string, string | undefined>): string {
		const params = new URLSearchParams({ topics: options.topics.join(",") });
		if (options.account !== undefined) params.set("account", options.account);
		for (const [name, value] of Object.entries(extra)) if (value !== undefined) params.set(name, value);
		return params.toString();
	}

	const url = (extra: Record<string, string | undefined>) =>
		`${connection.baseUrl}/notifications/stream?${query(extra)}`;

	async function openSse(): Promise<Opened> {
		const headers: Record<string, string> = { accept: "text/event-stream" };
		if (resumed && lastEventId !== undefined) headers["last-event-id"] = lastEventId;
		const response = await connection.fetch(
			new Request(url({ since: resumed ? undefined : lastEventId }), { headers, signal: controller.signal }),
		);
		if (!response.ok) throw await TwinRegistryError.from(response);
		if (!response.body) throw new TypeError("The stream's answer has no body");
		const reader = response.body.getReader();
		return { frames: sseFrames(reader), cancel: () => void reader.cancel().catch(() => {}) };
	}

	async function openWebSocket(WebSocketClass: WebSocketConstructor): Promise<Opened> {
		const token = await connection.streamToken();
		const httpUrl = url({ since: lastEventId, access_token: token });
		const socket = new WebSocketClass(httpUrl.replace(/^http/, "ws"));
		const queue = new Queue<Frame>();
		let opened = false;
		let ended = false;
		socket.onopen = () => {
			opened = true;
			queue.ready();
		};
		socket.onmessage = (message) => {
			if (typeof message.data !== "string" || message.data === "pong") return;
			let frame: { id?: string; event: string; data: unknown };
			try {
				frame = JSON.parse(message.data) as typeof frame;
			} catch {
				return;
			}
			if (frame.event === "end") {
				const { code, reason } = frame.data as { code: number; reason: string };
				ended = true;
				queue.push({ kind: "end", code, reason });
				queue.finish();
			} else queue.push({ kind: "event", event: frame as StreamEvent });
		};
		socket.onerror = () => {};
		socket.onclose = ({ code, reason }) => {
			if (!opened) queue.fail(new HandshakeFailed());
			else if (!ended) queue.push({ kind: "end", code, reason });
			queue.finish();
		};
		const cancel = () => {
			if (socket.readyState <= 1) socket.close(1000);
			queue.finish();
		};
		try {
			await queue.opened(controller.signal);
		} catch (error) {
			cancel();
			if (!(error instanceof HandshakeFailed) || controller.signal.aborted) throw error;
			// A refused handshake shows no status: the same request over HTTP tells why.
			const response = await connection.fetch(
				new Request(httpUrl, { headers: { accept: "text/event-stream" }, signal: controller.signal }),
			);
			if (!response.ok) throw await TwinRegistryError.from(response);
			await response.body?.cancel();
			throw error;
		}
		return {
			frames: queue.iterator(),
			ack: (id) => socket.readyState === 1 && socket.send(JSON.stringify({ type: "ack", id })),
			cancel,
		};
	}

	async function* events(): AsyncGenerator<StreamEvent> {
		const WebSocketClass = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
		if (transport === "websocket" && !WebSocketClass) {
			throw new TypeError(
				"No WebSocket class: Node 20 has no global WebSocket (Node 22 has). Pass one as the WebSocket option (the ws package's fits), or read the stream over SSE.",
			);
		}
		let failures = 0;
		let wait = delayMs ?? 1000;
		while (!controller.signal.aborted) {
			try {
				current = WebSocketClass && transport === "websocket" ? await openWebSocket(WebSocketClass) : await openSse();
				for (;;) {
					const { done, value } = await current.frames.next();
					if (done || controller.signal.aborted) break;
					if (value.kind === "retry") wait = delayMs ?? value.ms;
					else if (value.kind === "end") {
						if (FINAL_CODES.has(value.code)) throw new StreamClosedError(value.code, value.reason);
						break;
					} else {
						failures = 0;
						lastEventId = value.event.id;
						resumed = true;
						yield value.event;
						current.ack?.(value.event.id);
					}
				}
			} catch (error) {
				if (controller.signal.aborted) return;
				if (error instanceof StreamClosedError) throw error;
				if (error instanceof TwinRegistryError && error.status < 500 && error.status !== 429) throw error;
				if (++failures > retries) throw error;
			} finally {
				current?.cancel();
				current = undefined;
			}
			const backoff = failures === 0 ? wait : Math.min(maxDelayMs, Math.max(wait, 250) * 2 ** (failures - 1));
			await sleep(backoff, controller.signal).catch(() => {});
		}
	}

	return {
		get lastEventId() {
			return lastEventId;
		},
		close,
		[Symbol.asyncIterator]() {
			if (iterating) throw new TypeError("A stream is read by one consumer");
			iterating = true;
			return events();
		},
	};
}

class HandshakeFailed extends Error {}

// Server-Sent Events from a body: fields `id`, `event`, `data` (lines joined by "\n", parsed as
// JSON) and `retry`; comments (the heartbeat) skipped.
async function* sseFrames(reader: ReadableStreamDefaultReader<Uint8Array>): AsyncGenerator<Frame> {
	const decoder = new TextDecoder();
	let buffer = "";
	let id: string | undefined;
	let event = "message";
	let data: string[] = [];
	for (;;) {
		const { done, value } = await reader.read();
		buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
		// A trailing \r waits for the next chunk, which may begin with its \n.
		const cut = !done && buffer.endsWith("\r") ? buffer.length - 1 : buffer.length;
		const lines = buffer.slice(0, cut).split(/\r\n|\r|\n/);
		// The last piece is a line still arriving.
		buffer = done ? "" : (lines.pop() ?? "") + buffer.slice(cut);
		for (const line of lines) {
			if (line === "") {
				if (data.length > 0) {
					const parsed = JSON.parse(data.join("\n")) as unknown;
					if (event === "end") {
						const { code, reason } = parsed as { code: number; reason: string };
						yield { kind: "end", code, reason };
					} else if (id !== undefined)
						yield { kind: "event", event: { id, event, data: parsed as StreamEvent["data"] } };
				}
				id = undefined;
				event = "message";
				data = [];
				continue;
			}
			if (line.startsWith(":")) continue;
			const colon = line.indexOf(":");
			const field = colon < 0 ? line : line.slice(0, colon);
			const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "");
			if (field === "id") id = value;
			else if (field === "event") event = value;
			else if (field === "data") data.push(value);
			else if (field === "retry" && /^\d+$/.test(value)) yield { kind: "retry", ms: Number(value) };
		}
		if (done) return;
	}
}

// Callbacks to an async iterator: frames pushed by a socket's handlers, taken by the stream.
class Queue<T> {
	private items: T[] = [];
	private finished = false;
	private failure: unknown;
	private isOpen = false;
	private wake: (() => void) | undefined;

	private notify() {
		const wake = this.wake;
		this.wake = undefined;
		wake?.();
	}
	push(item: T) {
		if (this.finished) return;
		this.items.push(item);
		this.notify();
	}
	ready() {
		this.isOpen = true;
		this.notify();
	}
	fail(error: unknown) {
		this.failure ??= error;
		this.notify();
	}
	finish() {
		this.finished = true;
		this.notify();
	}
	private next(): Promise<void> {
		return new Promise((resolve) => (this.wake = resolve));
	}
	async opened(signal: AbortSignal): Promise<void> {
		signal.addEventListener("abort", () => this.notify(), { once: true });
		while (!this.isOpen) {
			if (this.failure !== undefined) throw this.failure;
			if (this.finished || signal.aborted) throw new HandshakeFailed();
			await this.next();
		}
	}
	async *iterator(): AsyncGenerator<T> {
		for (;;) {
			const item = this.items.shift();
			if (item !== undefined) yield item;
			else if (this.finished) return;
			else await this.next();
		}
	}
}

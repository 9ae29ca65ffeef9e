import { CLOSE, type CloseCode, endFrame, isSseEnd, REASONS, SSE_HEARTBEAT, SSE_PREAMBLE, sseFrameId } from "./frames";

// A stream over Server-Sent Events: the Worker holds an internal WebSocket to the stream object
// (the same hibernated kind a WebSocket client gets) and writes each frame, which the object
// framed as an SSE event, into the response body. It acknowledges events as the body's reader
// takes them, writes a heartbeat comment while nothing else is written, and ends a stream whose
// reader leaves more than MAX_UNREAD_BYTES unread: a slow reader reconnects and resumes from the
// log instead of growing a buffer here.

export const MAX_UNREAD_BYTES = 1024 * 1024;
// Acknowledged after this many events taken, or this long after the reader caught up: one
// acknowledgement covers a burst, and the object's window (1000 messages) is never the limit.
const ACK_EVERY = 100;
const ACK_DELAY_MS = 500;
// How long an ended stream's last bytes may wait for a reader that does not read them.
const LINGER_MS = 10_000;

const encoder = new TextEncoder();

export function eventStream(
	socket: WebSocket,
	heartbeatSeconds: number,
	headers: Record<string, string> = {},
): Response {
	const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
	const writer = writable.getWriter();
	let unread = 0;
	let taken: string | undefined;
	let sinceAck = 0;
	let ended = false;
	let heartbeat: number | null = null;
	let acking: number | null = null;

	const acknowledge = () => {
		clearTimeout(acking);
		acking = null;
		if (taken === undefined) return;
		try {
			socket.send(JSON.stringify({ type: "ack", id: taken }));
		} catch {
			// The object closed the socket; the close event ends the stream.
		}
		taken = undefined;
		sinceAck = 0;
	};

	const beat = () => {
		clearTimeout(heartbeat);
		heartbeat = setTimeout(() => {
			write(SSE_HEARTBEAT);
			try {
				socket.send("ping");
			} catch {
				// As above.
			}
		}, heartbeatSeconds * 1000);
	};

	// Ends the body after the `end` event: closed once read, or dropped after LINGER_MS.
	const finish = (code: CloseCode | undefined) => {
		if (ended) return;
		ended = true;
		if (code !== undefined) push(endFrame(code, true));
		clearTimeout(heartbeat);
		clearTimeout(acking);
		const linger = setTimeout(() => writer.abort().catch(() => undefined), LINGER_MS);
		writer.close().then(
			() => clearTimeout(linger),
			() => clearTimeout(linger),
		);
		try {
			socket.close(code ?? 1000, code === undefined ? "reader left" : REASONS[code]);
		} catch {
			// Already closed by the object.
		}
	};

	function write(text: string) {
		if (ended) return;
		push(text);
		beat();
		if (unread > MAX_UNREAD_BYTES) finish(CLOSE.tooFarBehind);
	}

	function push(text: string) {
		const bytes = encoder.encode(text);
		const id = sseFrameId(text);
		unread += bytes.byteLength;
		writer.write(bytes).then(
			() => {
				unread -= bytes.byteLength;
				if (id === undefined) return;
				taken = id;
				if (++sinceAck >= ACK_EVERY) acknowledge();
				else if (unread === 0 && acking === null) acking = setTimeout(acknowledge, ACK_DELAY_MS);
			},
			// The reader went away: nothing more to write, and the object drops the socket.
			() => finish(undefined),
		);
	}

	socket.accept();
	socket.addEventListener("message", (event) => {
		if (typeof event.data !== "string" || event.data === "pong") return;
		write(event.data);
		if (isSseEnd(event.data)) finish(undefined);
	});
	// Closed without an `end` (the object restarted, a deploy): the client learns it alike.
	socket.addEventListener("close", (event) =>
		finish(event.code in REASONS ? (event.code as CloseCode) : CLOSE.restart),
	);
	write(SSE_PREAMBLE);
	return new Response(readable, {
		headers: { "content-type": "text/event-stream", "cache-control": "no-store", ...headers },
	});
}

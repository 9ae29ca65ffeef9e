// What a live stream writes, in its two framings, and what a client may write back. Pure: the
// stream object builds every frame here and the Worker's SSE bridge only passes them on.

// Close codes (WebSocket close frames, and the `code` of an SSE `end` event).
export const CLOSE = {
	credentialEnded: 4401,
	permissionEnded: 4403,
	tooFarBehind: 4408,
	replaced: 4409,
	unexpectedFrame: 1008,
	restart: 1012,
} as const;
export type CloseCode = (typeof CLOSE)[keyof typeof CLOSE];

export const REASONS: Record<CloseCode, string> = {
	4401: "The stream's credential ended",
	4403: "The stream's permission ended",
	4408: "The reader fell too far behind",
	4409: "Replaced by the user's newer stream",
	1008: "Unexpected client frame",
	1012: "The service restarted",
};

// One stored message as it travels: its id, trigger and the message's compact JSON.
export type Event = { id: number; event: string; data: string };

// WebSocket: one text frame per event, the SSE fields as JSON (`data` spliced in as stored).
export function socketFrame(e: Event): string {
	return `{"id":"${e.id}","event":"${e.event}","data":${e.data}}`;
}

// Server-Sent Events: `id`, `event`, `data` on one line, a blank line.
export function sseFrame(e: Event): string {
	return `id: ${e.id}\nevent: ${e.event}\ndata: ${e.data}\n\n`;
}

export const frame = (e: Event, sse: boolean) => (sse ? sseFrame(e) : socketFrame(e));

// The client re-reads state through the API; `id` is where the log stands, so a reconnect
// after it resumes from there.
export function resyncFrame(lastId: number, sse: boolean): string {
	return frame({ id: lastId, event: "resync", data: '{"type":"Resync"}' }, sse);
}

// The server's last write. No `id`: an EventSource would take it as the resume point.
export function endFrame(code: CloseCode, sse: boolean): string {
	const data = JSON.stringify({ code, reason: REASONS[code] });
	return sse ? `event: end\ndata: ${data}\n\n` : `{"event":"end","data":${data}}`;
}

// The SSE body's first line: how long an EventSource waits before reconnecting (ms).
export const SSE_PREAMBLE = "retry: 2000\n\n";
export const SSE_HEARTBEAT = ": hb\n\n";

// The event id of an SSE frame, for the bridge's acknowledgement; undefined for `end`.
export function sseFrameId(text: string): string | undefined {
	return /^id: (\d+)\n/.exec(text)?.[1];
}

export const isSseEnd = (text: string) => text.startsWith("event: end\n");

// The one frame a client may send (the runtime answers `ping` itself): an acknowledgement of
// every event up to `id`. Undefined for anything else, which closes the socket.
export function ackOf(message: string | ArrayBuffer): number | undefined {
	if (typeof message !== "string" || message.length > 64) return undefined;
	let parsed: unknown;
	try {
		parsed = JSON.parse(message);
	} catch {
		return undefined;
	}
	if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return undefined;
	const { type, id, ...rest } = parsed as Record<string, unknown>;
	if (type !== "ack" || typeof id !== "string" || !/^\d{1,16}$/.test(id) || Object.keys(rest).length) return undefined;
	return Number(id);
}

// A resume point: `since` or Last-Event-ID, 1..16 decimal digits.
export const EVENT_ID = /^\d{1,16}$/;

import { describe, expect, it } from "vitest";
import { ackOf, endFrame, frame, isSseEnd, resyncFrame, sseFrameId } from "../../../src/notifications/streams/frames";

// The two framings of a live stream, and the one frame a client may send.

const message = { id: 7, event: "ledger.entry.updated", data: '{"type":"Notification","n":1}' };

describe("stream frames", () => {
	it("carry one message as an SSE event and as a WebSocket text frame with the same fields", () => {
		expect(frame(message, true)).toBe('id: 7\nevent: ledger.entry.updated\ndata: {"type":"Notification","n":1}\n\n');
		const socket = frame(message, false);
		expect(JSON.parse(socket)).toEqual({
			id: "7",
			event: "ledger.entry.updated",
			data: { type: "Notification", n: 1 },
		});
		expect(Object.keys(JSON.parse(socket))).toEqual(["id", "event", "data"]);
	});

	it("say resync with the log's newest id, and end with the code and no id", () => {
		expect(resyncFrame(12, true)).toBe('id: 12\nevent: resync\ndata: {"type":"Resync"}\n\n');
		expect(JSON.parse(resyncFrame(0, false))).toEqual({ id: "0", event: "resync", data: { type: "Resync" } });
		const end = endFrame(4401, true);
		expect(end).toBe('event: end\ndata: {"code":4401,"reason":"The stream\'s credential ended"}\n\n');
		expect(end).not.toContain("id:");
		expect(JSON.parse(endFrame(4408, false))).toEqual({
			event: "end",
			data: { code: 4408, reason: "The reader fell too far behind" },
		});
	});

	it("let the SSE bridge find what to acknowledge and where a stream ends", () => {
		expect(sseFrameId(frame(message, true))).toBe("7");
		expect(sseFrameId(resyncFrame(3, true))).toBe("3");
		expect(sseFrameId(endFrame(4403, true))).toBeUndefined();
		expect(sseFrameId(": hb\n\n")).toBeUndefined();
		expect(isSseEnd(endFrame(4403, true))).toBe(true);
		expect(isSseEnd(frame(message, true))).toBe(false);
	});
});

describe("a client frame", () => {
	it("is an acknowledgement only when it is exactly {type: ack, id: <digits>}", () => {
		expect(ackOf('{"type":"ack","id":"42"}')).toBe(42);
		expect(ackOf('{"id":"1","type":"ack"}')).toBe(1);
		for (const other of [
			"ping",
			"",
			"{}",
			'{"type":"ack"}',
			'{"type":"ack","id":42}',
			'{"type":"ack","id":"-1"}',
			'{"type":"ack","id":"1","x":1}',
			'{"type":"nack","id":"1"}',
			"[1]",
			"null",
			`{"type":"ack","id":"${"1".repeat(17)}"}`,
			`{"type":"ack","id":"1"${" ".repeat(64)}}`,
		]) {
			expect([other, ackOf(other)]).toEqual([other, undefined]);
		}
		expect(ackOf(new ArrayBuffer(4))).toBeUndefined();
	});
});

import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { drained, openSocket, openSse, seedStreamMessages, streamPath } from "./helpers";

// What a stream may cost: a reader is sent at most 1000 messages or 4 MiB it has not
// acknowledged, the rest waits in the log, and one that lets more than that pile up live is
// dropped (4408) instead of buffered. An SSE reader is acknowledged for by the Worker as it
// reads, and dropped past 1 MiB unread. Idle SSE streams write a heartbeat; idle WebSockets
// nothing.

type Socket = Awaited<ReturnType<typeof openSocket>>;

// The next `count` frames.
async function take(socket: Socket, count: number) {
	const frames = [];
	for (let i = 0; i < count; i++) frames.push(await socket.next(`frame ${i + 1} of ${count}`));
	return frames;
}

const ids = (frames: { id: string }[]) => frames.map((f) => Number(f.id));

// Three messages on the socket's topic, each from its own write (whose draining puts messages
// of another topic between them), as the socket receives them.
async function seedAndDrain(socket: Socket, admin: Awaited<ReturnType<typeof bootstrap>>, twin: string) {
	for (let i = 0; i < 3; i++) await seedStreamMessages(admin, twin, "alerts", 1);
	return drained(socket);
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("a WebSocket reader", () => {
	it("is sent at most 1000 messages it has not acknowledged; an ack sends what waited, in order", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const socket = await openSocket(streamPath("alerts"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "alerts", 1000);
		expect(ids(await drained(socket))).toEqual(range(1, 1000));
		// id 1001 is the draining write's, on another topic. These 200 wait.
		await seedStreamMessages(admin, twin, "alerts", 200);
		expect(await drained(socket)).toEqual([]);
		socket.ack("1000");
		expect(ids(await take(socket, 200))).toEqual(range(1002, 1201));
		expect(await drained(socket)).toEqual([]);
		// Acknowledged up to a point: the window has room again, and new messages flow at once.
		socket.ack("1100");
		await seedStreamMessages(admin, twin, "alerts", 150);
		expect(ids(await drained(socket))).toEqual(range(1203, 1352));
	});

	it("is sent at most 4 MiB it has not acknowledged", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const socket = await openSocket(streamPath("big"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "big", 50, 100_000);
		const first = await drained(socket);
		const bytes = first.reduce((n, f) => n + JSON.stringify(f.data).length, 0);
		expect(first.length).toBeGreaterThan(35);
		expect(first.length).toBeLessThan(50);
		expect(bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
		socket.ack(first.at(-1).id);
		expect(ids(await take(socket, 50 - first.length))).toEqual(range(first.length + 1, 50));
		expect(await drained(socket)).toEqual([]);
	});

	it("that lets more than 1000 live messages pile up is closed with 4408, not buffered", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const socket = await openSocket(streamPath("alerts"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "alerts", 1000);
		expect((await drained(socket)).length).toBe(1000);
		await seedStreamMessages(admin, twin, "alerts", 1001);
		expect(await socket.next("the end frame")).toEqual({
			event: "end",
			data: { code: 4408, reason: "The reader fell too far behind" },
		});
		expect(await socket.closed).toEqual({ code: 4408, reason: "The reader fell too far behind" });
	});

	it("that lets more than 4 MiB of live messages pile up is closed with 4408", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const socket = await openSocket(streamPath("big"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "big", 45, 100_000);
		await drained(socket);
		await seedStreamMessages(admin, twin, "big", 45, 100_000);
		expect(await socket.closed).toEqual({ code: 4408, reason: "The reader fell too far behind" });
	});

	it("that acknowledges a message it was never sent is closed with 4408: an ack cannot open the window unread", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		// Past the last message sent: 1000 are sent, the next 200 wait, and an ack of one of
		// those claims a read that cannot have happened.
		const ahead = await openSocket(streamPath("alerts"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "alerts", 1000);
		expect((await drained(ahead)).length).toBe(1000);
		await seedStreamMessages(admin, twin, "alerts", 200);
		ahead.ack("1100");
		expect(await ahead.next("the end frame")).toEqual({
			event: "end",
			data: { code: 4408, reason: "The reader fell too far behind" },
		});
		expect((await ahead.closed).code).toBe(4408);
		// Below the last sent, the id of another topic's message between two it was sent.
		const other = await openSocket(streamPath("alerts"), { secret: admin.secret });
		const before = ids(await seedAndDrain(other, admin, twin));
		expect(before[1]).toBe(before[0] + 2);
		other.ack(String(before[0] + 1));
		expect((await other.closed).code).toBe(4408);
		// An id it was sent, and one it acknowledged before, are taken.
		const honest = await openSocket(streamPath("alerts"), { secret: admin.secret });
		const sent = ids(await seedAndDrain(honest, admin, twin));
		honest.ack(String(sent[1]));
		honest.ack(String(sent[0]));
		honest.ack(String(sent.at(-1)));
		expect(await drained(honest)).toEqual([]);
		expect(honest.ws!.readyState).toBe(WebSocket.OPEN);
	});

	it("that sends anything but an ack or a ping is closed with 1008", async () => {
		const admin = await bootstrap();
		for (const frame of [
			"hello",
			'{"type":"ack"}',
			'{"type":"ack","id":7}',
			'{"type":"ack","id":"7","more":1}',
			new Uint8Array([1, 2]),
		]) {
			const socket = await openSocket(streamPath("alerts"), { secret: admin.secret });
			socket.ws!.send(frame);
			expect(await socket.next("the end frame")).toEqual({
				event: "end",
				data: { code: 1008, reason: "Unexpected client frame" },
			});
			expect((await socket.closed).code).toBe(1008);
		}
	});

	it("hears nothing from the server while idle; the runtime answers its pings", async () => {
		const admin = await bootstrap();
		const socket = await openSocket(streamPath("alerts"), {
			secret: admin.secret,
			env: { STREAM_HEARTBEAT_SECONDS: "0.1" },
		});
		// Nothing to await for what does not come: four SSE heartbeat periods pass first.
		await new Promise((resolve) => setTimeout(resolve, 400));
		expect(await drained(socket)).toEqual([]);
	});
});

describe("an SSE reader", () => {
	it("is acknowledged for by the Worker as it reads: more than a window's worth arrives, in order", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const stream = await openSse(streamPath("alerts"), { secret: admin.secret });
		await seedStreamMessages(admin, twin, "alerts", 1500);
		const seen = [];
		for (let i = 0; i < 1500; i++) seen.push(Number((await stream.event()).id));
		expect(seen).toEqual(range(1, 1500));
		await stream.close();
	});

	it("that leaves more than 1 MiB unread is ended with 4408", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const stream = await openSse(streamPath("big"), { secret: admin.secret, paused: true });
		await seedStreamMessages(admin, twin, "big", 30, 100_000);
		stream.resume();
		await stream.done;
		const events = stream.text.split("\n\n").filter((block) => block.startsWith("id: ") || block.startsWith("event: "));
		expect(events.length).toBeLessThan(31);
		expect(events.at(-1)).toBe(
			`event: end\ndata: ${JSON.stringify({ code: 4408, reason: "The reader fell too far behind" })}`,
		);
	});

	it("writes a heartbeat comment while nothing else is written", async () => {
		const admin = await bootstrap();
		const stream = await openSse(streamPath("alerts"), {
			secret: admin.secret,
			env: { STREAM_HEARTBEAT_SECONDS: "0.2" },
		});
		expect(await stream.next("the preamble")).toEqual({});
		const at = Date.now();
		expect(await stream.next("a heartbeat")).toEqual({ comment: "hb" });
		expect(Date.now() - at).toBeGreaterThanOrEqual(150);
		expect(await stream.next("another heartbeat")).toEqual({ comment: "hb" });
		expect(stream.text).toBe("retry: 2000\n\n: hb\n\n: hb\n\n");
		await stream.close();
	});
});

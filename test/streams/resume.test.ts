import { describe, expect, it } from "vitest";
import { expectError, call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { inStreamObject, openSocket, openSse, publish, seedStreamMessages, streamPath } from "./helpers";

// Resumption: after Last-Event-ID (SSE) or `since`, every message of the stream's topics the log
// still holds, in id order, then live ones, none twice; `resync` when the log cannot say.

describe("resuming a stream", () => {
	it("over SSE after Last-Event-ID: what was missed, in order, then live, nothing twice", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const first = await openSse(streamPath("alerts"), { secret: admin.secret });
		for (const n of [1, 2, 3]) await publish(admin.secret, twin, "n", n, ["alerts"]);
		expect([(await first.event()).id, (await first.event()).id, (await first.event()).id]).toEqual(["1", "2", "3"]);
		await first.close();
		// Missed while disconnected, one of them on another topic.
		await publish(admin.secret, twin, "n", 4, ["alerts"]);
		await publish(admin.secret, twin, "other", 1, ["elsewhere"]);
		await publish(admin.secret, twin, "n", 5, ["alerts"]);

		const again = await openSse(streamPath("alerts"), { secret: admin.secret, headers: { "last-event-id": "3" } });
		const replayed = [await again.event(), await again.event()];
		expect(replayed.map((e) => [e.id, e.data.event.n.new_value])).toEqual([
			["4", 4],
			["6", 5],
		]);
		await publish(admin.secret, twin, "n", 6, ["alerts"]);
		expect((await again.event()).id).toBe("7");
		expect(again.pending).toEqual([]);
		const ids = [...again.text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1]);
		expect(ids).toEqual(["4", "6", "7"]);
		await again.close();
	});

	it("over a WebSocket after since; Last-Event-ID wins over since", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const n of [1, 2, 3, 4]) await publish(admin.secret, twin, "n", n, ["alerts"]);
		const socket = await openSocket(streamPath("alerts", "since=2"), { secret: admin.secret });
		expect([(await socket.next()).id, (await socket.next()).id]).toEqual(["3", "4"]);
		const both = await openSocket(streamPath("alerts", "since=1"), {
			secret: admin.secret,
			headers: { "last-event-id": "3" },
		});
		expect((await both.next()).id).toBe("4");
		const sse = await openSse(streamPath("alerts", "since=0"), { secret: admin.secret });
		expect((await sse.event()).id).toBe("1");
		await sse.close();
	});

	it("opens with resync, then live, when messages after the point were pruned (past the newest 1000)", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await seedStreamMessages(admin, twin, "alerts", 1100);
		// 1100 seeded and one draining write: ids 1..1101; the oldest 101 are gone.
		const sse = await openSse(streamPath("alerts"), { secret: admin.secret, headers: { "last-event-id": "5" } });
		const resync = await sse.event();
		expect(resync).toEqual({ id: "1101", event: "resync", data: { type: "Resync" } });
		expect(sse.text).toContain('id: 1101\nevent: resync\ndata: {"type":"Resync"}\n\n');
		await publish(admin.secret, twin, "live", 1, ["alerts"]);
		expect((await sse.event()).id).toBe("1102");
		await sse.close();

		// 1102 messages now, the newest 1000 held: a point at the highest id pruned resumes whole.
		const whole = await openSocket(streamPath("alerts", "since=102"), { secret: admin.secret });
		expect(await whole.next()).toMatchObject({ id: "103", event: "ledger.entry.updated" });
		const short = await openSocket(streamPath("alerts", "since=101"), { secret: admin.secret });
		expect(await short.next()).toMatchObject({ id: "1102", event: "resync" });
	});

	it("opens with resync for an id the log has not issued, or a Last-Event-ID it cannot read", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		const ahead = await openSocket(streamPath("alerts", "since=99"), { secret: admin.secret });
		expect(await ahead.next()).toEqual({ id: "1", event: "resync", data: { type: "Resync" } });
		const garbled = await openSse(streamPath("alerts"), {
			secret: admin.secret,
			headers: { "last-event-id": "seven" },
		});
		expect(await garbled.event()).toEqual({ id: "1", event: "resync", data: { type: "Resync" } });
		await garbled.close();
		// An empty log resyncs to "0".
		const empty = await bootstrap();
		const fresh = await openSocket(streamPath("alerts", "since=3"), { secret: empty.secret });
		expect(await fresh.next()).toEqual({ id: "0", event: "resync", data: { type: "Resync" } });
	});

	it("refuses a malformed since with 400101", async () => {
		const admin = await bootstrap();
		for (const since of ["abc", "-1", "1.5", "12345678901234567", ""]) {
			expectError(await call("GET", streamPath("alerts", `since=${since}`), { secret: admin.secret }), 400, 400101);
		}
	});

	it("holds nothing older than 48 hours: a point among older messages resyncs", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const n of [1, 2, 3]) await publish(admin.secret, twin, "n", n, ["alerts"]);
		// The first two messages age past the window.
		await inStreamObject(admin.account, (_, state) => {
			state.storage.sql.exec("UPDATE log SET at = at - 48 * 3600 - 1 WHERE id <= 2");
		});
		const stale = await openSocket(streamPath("alerts", "since=1"), { secret: admin.secret });
		expect(await stale.next()).toEqual({ id: "3", event: "resync", data: { type: "Resync" } });
		const fine = await openSocket(streamPath("alerts", "since=2"), { secret: admin.secret });
		expect((await fine.next()).id).toBe("3");
	});

	it("hands each outbox row over once, however often the drain sends it", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		const row = {
			id: Number.MAX_SAFE_INTEGER,
			account: admin.account,
			twin,
			trigger: "ledger.entry.updated",
			topics: '{"alerts":["n"]}',
			entries: '{"n":{"new_value":2,"old_value":1,"changed_ts":1}}',
			at: Date.now() / 1000,
			sight: null,
		};
		const counts = await inStreamObject(admin.account, async (instance) => [
			await instance.append(admin.account, [row]),
			await instance.append(admin.account, [row]),
		]);
		expect(counts).toEqual([1, 0]);
	});

	it("after a restart closes every socket, lets both kinds of client resume and lose nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sse = await openSse(streamPath("alerts"), { secret: admin.secret });
		const socket = await openSocket(streamPath("alerts"), { secret: admin.secret });
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		expect([(await sse.event()).id, (await socket.next()).id]).toEqual(["1", "1"]);
		// What a deploy does: the runtime closes the object's sockets, with no `end` of its own.
		await inStreamObject(admin.account, (_, state) => {
			for (const ws of state.getWebSockets()) ws.close(1012, "restart");
		});
		expect((await socket.closed).code).toBe(1012);
		expect(await sse.event("the end event")).toEqual({
			event: "end",
			data: { code: 1012, reason: "The service restarted" },
		});
		await sse.done;
		await publish(admin.secret, twin, "n", 2, ["alerts"]);
		const again = await openSse(streamPath("alerts"), { secret: admin.secret, headers: { "last-event-id": "1" } });
		const resumed = await openSocket(streamPath("alerts", "since=1"), { secret: admin.secret });
		expect([(await again.event()).id, (await resumed.next()).id]).toEqual(["2", "2"]);
		await again.close();
	});
});

import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { ledger } from "../support/ledgers";
import { until } from "../support/waiting";
import { loggedErrors } from "../support/faults";
import { objectEnv, fireAccountAlarm } from "../support/objects";
import { openSocket, openSse, publish, streamPath } from "./helpers";
import { dbOf } from "../support/shards";

// Live delivery through the Worker to real SSE and WebSocket clients: what a stream receives,
// in which framing, on which topics, and that nothing committed after the headers is missed.

describe("a live stream", () => {
	it("over SSE: 200 text/event-stream, the retry preamble, then each message as it commits", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const stream = await openSse(streamPath("alerts"), { secret: admin.secret });
		expect(stream.res.status).toBe(200);
		expect(stream.res.headers.get("content-type")).toBe("text/event-stream");
		expect(stream.res.headers.get("cache-control")).toBe("no-store");
		expect(stream.res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
		expect(stream.res.headers.get("access-control-allow-origin")).toBe("*");

		// Written right after the headers arrived: registered before them, so it is not missed.
		const written = await publish(admin.secret, twin, "temp", 21.5, ["alerts"]);
		const event = await stream.event();
		expect(stream.text.startsWith("retry: 2000\n\n")).toBe(true);
		expect(event.id).toBe("1");
		expect(event.event).toBe("ledger.entry.added");
		// The webhook message's keys, with the topic and the publishing account in place of the
		// subscription and the hash.
		expect(Object.keys(event.data)).toEqual([
			"type",
			"trigger",
			"message",
			"twin",
			"event",
			"sent_ts",
			"topic",
			"account",
		]);
		expect(event.data).toEqual({
			type: "Notification",
			trigger: "ledger.entry.added",
			message: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
			twin,
			event: { temp: { new_value: 21.5, old_value: null, changed_ts: written.body.entries.temp.value_changed_ts } },
			sent_ts: written.body.entries.temp.value_changed_ts,
			topic: "alerts",
			account: admin.account,
		});
		// One line of compact JSON per event.
		expect(stream.text).toContain(`id: 1\nevent: ledger.entry.added\ndata: ${JSON.stringify(event.data)}\n\n`);

		await publish(admin.secret, twin, "temp", 22, ["alerts"]);
		expect(await stream.event()).toMatchObject({
			id: "2",
			event: "ledger.entry.updated",
			data: { event: { temp: { new_value: 22, old_value: 21.5 } } },
		});
		expect((await call("DELETE", ledger(twin, "personal", "?entries=temp"), { secret: admin.secret })).status).toBe(
			200,
		);
		expect(await stream.event()).toMatchObject({
			id: "3",
			event: "ledger.entry.deleted",
			data: { event: { temp: { new_value: null, old_value: 22 } } },
		});
		await stream.close();
	});

	it("answers SSE whatever the Accept header says", async () => {
		const admin = await bootstrap();
		for (const accept of ["*/*", "text/event-stream", "application/json"]) {
			const stream = await openSse(streamPath("alerts"), { secret: admin.secret, headers: { accept } });
			expect([accept, stream.res.status, stream.res.headers.get("content-type")]).toEqual([
				accept,
				200,
				"text/event-stream",
			]);
			await stream.close();
		}
	});

	it("over a WebSocket: 101, then one text frame per message with the SSE fields as JSON", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const stream = await openSocket(streamPath("alerts"), { secret: admin.secret });
		expect(stream.res.status).toBe(101);
		expect(stream.res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
		await publish(admin.secret, twin, "temp", 1, ["alerts"]);
		const frame = await stream.next();
		expect(Object.keys(frame)).toEqual(["id", "event", "data"]);
		expect(frame).toMatchObject({
			id: "1",
			event: "ledger.entry.added",
			data: { type: "Notification", topic: "alerts", twin, account: admin.account },
		});
		// The runtime answers a `ping` text frame itself.
		stream.send("ping");
		expect(await stream.next("pong")).toBe("pong");
	});

	it("on two topics: both topics' messages, each its own id; a one-topic stream sees gaps", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const both = await openSocket(streamPath("beta,alpha"), { secret: admin.secret });
		const alpha = await openSse(streamPath("alpha"), { secret: admin.secret });
		// One write publishing to both: one message per topic, numbered in lexical topic order.
		await publish(admin.secret, twin, "a", 1, ["beta", "alpha"]);
		await publish(admin.secret, twin, "b", 1, ["beta"]);
		await publish(admin.secret, twin, "c", 1, ["alpha"]);
		const frames = [await both.next(), await both.next(), await both.next(), await both.next()];
		expect(frames.map((f) => [f.id, f.data.topic, Object.keys(f.data.event)])).toEqual([
			["1", "alpha", ["a"]],
			["2", "beta", ["a"]],
			["3", "beta", ["b"]],
			["4", "alpha", ["c"]],
		]);
		// The same event, two messages: each its own uuid.
		expect(frames[0].data.message).not.toBe(frames[1].data.message);
		expect([(await alpha.event()).id, (await alpha.event()).id]).toEqual(["1", "4"]);
		await alpha.close();
	});

	it("sends nothing of topics it does not read, nor of another account", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		const otherTwin = await newTwin(other.secret);
		const stream = await openSocket(streamPath("alerts"), { secret: admin.secret });
		await publish(admin.secret, twin, "quiet", 1, ["other-topic"]);
		await publish(other.secret, otherTwin, "theirs", 1, ["alerts"]);
		await publish(admin.secret, twin, "loud", 1, ["alerts"]);
		// The first frame is the write that published to the stream's topic in its own account;
		// the one before it took id 1 in the account's log.
		expect(await stream.next()).toMatchObject({
			id: "2",
			data: { event: { loud: expect.anything() }, account: admin.account },
		});
		expect(stream.pending).toEqual([]);
	});

	it("numbers messages in the order the account's writes committed, also when they race", async () => {
		const admin = await bootstrap();
		const twins = await Promise.all(Array.from({ length: 5 }, () => newTwin(admin.secret)));
		const stream = await openSocket(streamPath("race"), { secret: admin.secret });
		await Promise.all(
			twins.flatMap((twin) => [1, 2, 3, 4].map((n) => publish(admin.secret, twin, `e${n}`, n, ["race"]))),
		);
		const frames = [];
		for (let i = 0; i < 20; i++) frames.push(await stream.next());
		expect(frames.map((f) => Number(f.id))).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
		// Commit order: the writes' own times never go back along the ids.
		const times = frames.map((f) => f.data.sent_ts);
		expect([...times].sort((a, b) => a - b)).toEqual(times);
		// Handed over: the D1 outbox keeps nothing once the stream object took the rows.
		await until(
			() =>
				dbOf(admin.account)
					.prepare("SELECT count(*) AS n FROM stream_outbox WHERE account = ?")
					.bind(admin.account)
					.first<{ n: number }>(),
			(row) => row?.n === 0,
			"the outbox to empty",
		);
	});

	it("writes the messages whether or not a stream listens: one row per write and trigger, one message per topic", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await publish(admin.secret, twin, "unheard", 1, ["t-one", "t-two"]);
		const stream = await openSocket(streamPath("t-one,t-two", "since=0"), { secret: admin.secret });
		expect([await stream.next(), await stream.next()].map((f) => [f.id, f.data.topic])).toEqual([
			["1", "t-one"],
			["2", "t-two"],
		]);
	});

	it("loses nothing when the stream object cannot take a write's messages: the account's alarm hands them over", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const stream = await openSocket(streamPath("alerts"), { secret: admin.secret });
		const down = { getByName: () => ({ append: async () => Promise.reject(new Error("the stream object is down")) }) };
		const restore = await objectEnv(admin.account, { STREAMS: down });
		// The write commits and answers; its row waits in the outbox.
		await publish(admin.secret, twin, "n", 1, ["alerts"]);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("the stream object is down"));
		const waiting = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM stream_outbox WHERE account = ?")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(waiting?.n).toBe(1);
		await restore();
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		expect(await stream.next()).toMatchObject({ id: "1", data: { event: { n: { new_value: 1 } } } });
	});
});

import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { type Account, bootstrap, member, role } from "../support/accounts";
import { newTwin } from "../support/twins";
import { drained, openSocket, openSse, publishEntries, streamPath } from "./helpers";
import { putStickers } from "../stickers/helpers";

// Live data for a reader whose role confines it (docs/streams.md, "Confined readers"): a driver
// who sees his vans gets their messages only, each with the entries he sees, live and on
// resume, over both transports; a change of his role or description applies to the next
// message, and his streams stay open while he may still stream.

// A fleet: a Driver role (a twin rule: his vans), two drivers and a dispatcher (the account's
// administrator), and a van of each driver.
async function fleet(rules: { twin?: string; entry?: string } = {}) {
	const admin = await bootstrap();
	const driverRole = await role(
		admin,
		{ effect: "deny", actions: null },
		{ twin: rules.twin ?? "TWIN.driver == user", entry: rules.entry ?? null },
		"Driver",
	);
	const ann = await member(admin, driverRole);
	const bob = await member(admin, driverRole);
	const annsVan = await newTwin(admin.secret, { driver: ann.user, plate: "AN-1" });
	const bobsVan = await newTwin(admin.secret, { driver: bob.user, plate: "BO-1" });
	return { admin, driverRole, ann, bob, annsVan, bobsVan };
}

// A write of `entries` on `van` that publishes each of them to `vans`.
const report = (admin: Account, van: string, entries: Record<string, unknown>) =>
	publishEntries(admin.secret, van, entries, ["vans"]);

const eventOf = (frame: { data: { twin: string; event: Record<string, { new_value: unknown }> } }) => ({
	twin: frame.data.twin,
	values: Object.fromEntries(Object.entries(frame.data.event).map(([name, body]) => [name, body.new_value])),
});

describe("a driver's stream", () => {
	it("carries his vans' messages only, over a WebSocket and SSE, and the dispatcher's all of them", async () => {
		const { admin, ann, annsVan, bobsVan } = await fleet();
		const annSocket = await openSocket(streamPath("vans"), { secret: ann.secret });
		const annSse = await openSse(streamPath("vans"), { secret: ann.secret });
		const dispatcher = await openSocket(streamPath("vans"), { secret: admin.secret });
		await report(admin, bobsVan, { mileage: 100 });
		await report(admin, annsVan, { mileage: 200 });
		expect((await drained(annSocket)).map(eventOf)).toEqual([{ twin: annsVan, values: { mileage: 200 } }]);
		const first = await annSse.event();
		expect(eventOf(first as never)).toEqual({ twin: annsVan, values: { mileage: 200 } });
		expect((await drained(dispatcher)).map(eventOf)).toEqual([
			{ twin: bobsVan, values: { mileage: 100 } },
			{ twin: annsVan, values: { mileage: 200 } },
		]);
		// Ids stay the account's: Bob's message took the id before Ann's.
		const all = await openSocket(streamPath("vans", "since=0"), { secret: admin.secret });
		const ids = (await drained(all)).map((frame) => Number(frame.id));
		expect(Number(first.id)).toBe(ids[1]);
		await annSse.close();
	});

	it("shows a hidden van's message exactly as no message at all, but for the gap in ids", async () => {
		// Two fleets alike; in the first another driver's van reports between Ann's two reports.
		const seen = [];
		for (const hidden of [true, false]) {
			const { admin, ann, annsVan, bobsVan } = await fleet();
			const socket = await openSocket(streamPath("vans"), { secret: ann.secret });
			await report(admin, annsVan, { mileage: 1 });
			if (hidden) await report(admin, bobsVan, { mileage: 2, secret: "x".repeat(1000) });
			await report(admin, annsVan, { mileage: 3 });
			const frames = await drained(socket);
			const normal = (text: string) =>
				text
					.replaceAll(annsVan, "van")
					.replaceAll(admin.account, "account")
					.replace(/"(id|message)":"[^"]+"/g, '"$1":"x"')
					.replace(/"(changed_ts|sent_ts)":[\d.]+/g, '"$1":0');
			seen.push(normal(JSON.stringify(frames)));
		}
		expect(seen[0]).toBe(seen[1]);
	});

	it("replays on resume exactly what the live stream showed", async () => {
		const { admin, ann, annsVan, bobsVan } = await fleet();
		await report(admin, annsVan, { mileage: 1 });
		await report(admin, bobsVan, { mileage: 2 });
		await report(admin, annsVan, { mileage: 3 });
		const socket = await openSocket(streamPath("vans", "since=0"), { secret: ann.secret });
		expect((await drained(socket)).map(eventOf)).toEqual([
			{ twin: annsVan, values: { mileage: 1 } },
			{ twin: annsVan, values: { mileage: 3 } },
		]);
		const sse = await openSse(streamPath("vans"), { secret: ann.secret, headers: { "last-event-id": "0" } });
		expect(eventOf((await sse.event()) as never)).toEqual({ twin: annsVan, values: { mileage: 1 } });
		expect(eventOf((await sse.event()) as never)).toEqual({ twin: annsVan, values: { mileage: 3 } });
		await sse.close();
	});

	it("moves a van between drivers when it is reassigned mid-stream", async () => {
		const { admin, ann, bob, annsVan } = await fleet();
		const annSocket = await openSocket(streamPath("vans"), { secret: ann.secret });
		const bobSocket = await openSocket(streamPath("vans"), { secret: bob.secret });
		await report(admin, annsVan, { mileage: 10 });
		expect(
			(
				await call("PATCH", `/twins/${annsVan}`, {
					secret: admin.secret,
					body: { description: { driver: bob.user, plate: "AN-1" } },
				})
			).status,
		).toBe(200);
		await report(admin, annsVan, { mileage: 20 });
		expect((await drained(annSocket)).map(eventOf)).toEqual([{ twin: annsVan, values: { mileage: 10 } }]);
		expect((await drained(bobSocket)).map(eventOf)).toEqual([{ twin: annsVan, values: { mileage: 20 } }]);
	});

	it("strips the entries his role hides, and sends nothing when none is left", async () => {
		const { admin, ann, annsVan } = await fleet({ entry: "entry_name != 'cost'" });
		const socket = await openSocket(streamPath("vans"), { secret: ann.secret });
		await report(admin, annsVan, { mileage: 5, cost: 99 });
		await report(admin, annsVan, { cost: 120 });
		await report(admin, annsVan, { mileage: 6 });
		const frames = await drained(socket);
		expect(frames.map(eventOf)).toEqual([
			{ twin: annsVan, values: { mileage: 5 } },
			{ twin: annsVan, values: { mileage: 6 } },
		]);
		// Every other key of the message is as the dispatcher's.
		expect(Object.keys(frames[0].data)).toEqual([
			"type",
			"trigger",
			"message",
			"twin",
			"event",
			"sent_ts",
			"topic",
			"account",
		]);
	});

	it("reads as the role and the description now are from the next message, without dropping the connection", async () => {
		const admin = await bootstrap();
		const depotRole = await role(
			admin,
			{ effect: "deny", actions: null },
			{ twin: "TWIN.depot == USER.depot" },
			"Dispatcher",
		);
		const carol = await member(admin, depotRole, { depot: "north" });
		const north = await newTwin(admin.secret, { depot: "north" });
		const south = await newTwin(admin.secret, { depot: "south" });
		const socket = await openSocket(streamPath("vans"), { secret: carol.secret });
		await report(admin, north, { n: 1 });
		await report(admin, south, { n: 1 });
		expect(
			(await call("PATCH", `/users/${carol.user}`, { secret: admin.secret, body: { description: { depot: "south" } } }))
				.status,
		).toBe(200);
		await report(admin, north, { n: 2 });
		await report(admin, south, { n: 2 });
		const changed = await call("PATCH", `/roles/${depotRole}`, {
			secret: admin.secret,
			body: { rules: { twin: "true", entry: null, identity: null } },
		});
		expect(changed.status).toBe(200);
		await report(admin, north, { n: 3 });
		expect((await drained(socket)).map(eventOf)).toEqual([
			{ twin: north, values: { n: 1 } },
			{ twin: south, values: { n: 2 } },
			{ twin: north, values: { n: 3 } },
		]);
		expect(socket.ws!.readyState).toBe(WebSocket.OPEN);
	});

	it("reads DICT from the stream token, the dictionary of the request that made it", async () => {
		const admin = await bootstrap();
		const siteRole = await role(
			admin,
			{ effect: "deny", actions: null },
			{ twin: "TWIN.site == DICT.site" },
			"On site",
		);
		const dave = await member(admin, siteRole);
		const here = await newTwin(admin.secret, { site: "dock-4" });
		const there = await newTwin(admin.secret, { site: "dock-9" });
		const dict = btoa(JSON.stringify({ site: "dock-4" }));
		const made = await call("POST", "/notifications/stream/tokens", {
			secret: dave.secret,
			body: {},
			headers: { "x-trustedtwin": dict },
		});
		expect(made.status).toBe(201);
		const socket = await openSocket(streamPath("vans", `access_token=${made.body.token}`));
		expect(socket.res.status).toBe(101);
		await report(admin, there, { n: 1 });
		await report(admin, here, { n: 2 });
		expect((await drained(socket)).map(eventOf)).toEqual([{ twin: here, values: { n: 2 } }]);
	});

	it("carries the stickers of his vans only", async () => {
		const { admin, ann, bob, annsVan, bobsVan } = await fleet();
		const socket = await openSocket(streamPath("vans"), { secret: ann.secret });
		await putStickers(admin.secret, bobsVan, {
			red: { note: "Bob's", recipients: [bob.user], publish: { on_put: "vans" } },
		});
		// The account's own sticker on his van, addressed to someone else: his account's stickers he sees.
		await putStickers(admin.secret, annsVan, {
			blue: { note: "for Bob, on Ann's van", recipients: [bob.user], publish: { on_put: "vans" } },
		});
		const frames = await drained(socket);
		expect(frames.map((frame) => [frame.event, frame.data.twin, frame.data.event.note])).toEqual([
			["sticker.put", annsVan, "for Bob, on Ann's van"],
		]);
	});

	it("gets, late but whole and in order, what a turn's filter work could not reach", async () => {
		// Fourteen drivers whose rule first spends some 900,000 units on a long description, each
		// its own group (the rule reads `user`): past a turn's 10,000,000, the last groups read in
		// the next turn.
		const admin = await bootstrap();
		const heavy = Array.from({ length: 3 }, () => `(${Array(10).fill("TWIN.s < 'a'").join(" or ")})`).join(" or ");
		const driverRole = await role(
			admin,
			{ effect: "deny", actions: null },
			{ twin: `${heavy} or TWIN.driver != user` },
			"Driver",
		);
		const drivers = [];
		for (let i = 0; i < 14; i++) drivers.push(await member(admin, driverRole));
		const van = await newTwin(admin.secret, { driver: "nobody", s: "b".repeat(30_000) });
		const sockets = [];
		for (const driver of drivers) sockets.push(await openSocket(streamPath("vans"), { secret: driver.secret }));
		await report(admin, van, { n: 1 });
		await report(admin, van, { n: 2 });
		for (const socket of sockets) {
			expect(eventOf(await socket.next("the first message", 10_000))).toEqual({ twin: van, values: { n: 1 } });
			expect(eventOf(await socket.next("the second message", 10_000))).toEqual({ twin: van, values: { n: 2 } });
		}
	}, 60_000);
});

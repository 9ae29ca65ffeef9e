// The live streams part of `npm run bench`: write-to-stream latency with 100 streams open (50
// WebSockets and 50 SSE streams of 10 users, each acknowledging what it reads), from the start
// of a ledger write to each stream's receipt of its message; the same for a fleet of 1000
// filtered driver streams beside 100 dispatchers (see `fleet`); and the memory an idle stream
// costs the local runtime (the workerd processes under the dev server, summed), for 500 idle
// SSE streams and then 1000 idle WebSockets. Under `wrangler dev` no object is evicted, so an
// idle WebSocket's figure is what a hibernated socket costs while its object stays in memory.
import { call } from "./api.mjs";
import { runtimeMemory } from "./memory.mjs";

const STREAMS = 100;
const WRITES = 200;
const IDLE_SOCKETS = 1000;
const IDLE_SSE = 500;
// A user holds at most 10 streams per publishing account.
const PER_USER = 10;
const MB = 1_000_000;

// `count` users of the account with `role` (the administrator's by default), each with a
// secret; `from` keeps the addresses their PINs are redeemed from apart between calls.
async function users(url, secret, count, role, from = 9) {
	const me = await call(url, secret, "GET", "/whoami");
	const made = [];
	for (let i = 0; i < count; i++) {
		const { uuid } = await call(url, secret, "POST", "/users", { name: `streamer-${i}`, role: role ?? me.role });
		const { pin } = await call(url, secret, "POST", `/users/${uuid}/secrets`, {});
		const res = await fetch(`${url}/secrets/${me.account}/${pin}`, {
			method: "POST",
			headers: { "cf-connecting-ip": `10.${from}.${i >> 8}.${i & 255}` },
		});
		if (res.status !== 201) throw new Error(`redeeming a PIN: ${res.status}`);
		made.push({ user: uuid, secret: (await res.json()).secret });
	}
	return made;
}

// A WebSocket stream (with a stream token: Node's WebSocket sets no header) that calls
// `onMessage` with each message and acknowledges it.
async function socket(url, secret, topic, onMessage = () => undefined) {
	const { token } = await call(url, secret, "POST", "/notifications/stream/tokens", {});
	const ws = new WebSocket(`${url.replace("http", "ws")}/notifications/stream?topics=${topic}&access_token=${token}`);
	await new Promise((resolve, reject) => {
		ws.onopen = resolve;
		ws.onerror = () => reject(new Error("a WebSocket stream did not open"));
	});
	ws.onmessage = (event) => {
		const frame = JSON.parse(event.data);
		onMessage(frame.data);
		ws.send(JSON.stringify({ type: "ack", id: frame.id }));
	};
	return { close: () => ws.close(1000) };
}

// An SSE stream read as it arrives; `onMessage` with each message.
async function sse(url, secret, topic, onMessage = () => undefined) {
	const controller = new AbortController();
	const res = await fetch(`${url}/notifications/stream?topics=${topic}`, {
		headers: { authorization: secret },
		signal: controller.signal,
	});
	if (res.status !== 200) throw new Error(`an SSE stream answered ${res.status}`);
	// Read in the background while the fleet is measured.
	void (async () => {
		const decoder = new TextDecoder();
		let buffer = "";
		try {
			for await (const chunk of res.body) {
				buffer += decoder.decode(chunk, { stream: true });
				for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
					const data = /^data: (.*)$/m.exec(buffer.slice(0, end))?.[1];
					if (data) onMessage(JSON.parse(data));
					buffer = buffer.slice(end + 2);
				}
			}
		} catch {}
	})();
	return { close: () => controller.abort() };
}

const percentile = (sorted, p) => +sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))].toFixed(2);
const summary = (values) => {
	const sorted = [...values].sort((a, b) => a - b);
	return {
		samples: sorted.length,
		p50_ms: percentile(sorted, 0.5),
		p95_ms: percentile(sorted, 0.95),
		max_ms: +sorted.at(-1).toFixed(2),
	};
};

// The same writes with no stream open: what the streams add to a publishing write.
async function alone(url, secret) {
	const { uuid: twin } = await call(url, secret, "POST", "/twins", {});
	await call(url, secret, "POST", `/twins/${twin}/ledgers/personal`, {
		entries: { level: { value: -1, publish: { "bench-alone": "true" } } },
	});
	const writes = [];
	for (let i = 0; i < WRITES; i++) {
		const start = performance.now();
		await call(url, secret, "PATCH", `/twins/${twin}/ledgers/personal/value`, { entries: { level: { value: i } } });
		writes.push(performance.now() - start);
	}
	return summary(writes);
}

async function latency(url, secret, streamers) {
	const started = new Map();
	const seen = { socket: [], sse: [] };
	const arrived = (kind) => (message) => {
		const at = performance.now();
		const start = started.get(message.event.level.new_value);
		if (start !== undefined) seen[kind].push(at - start);
	};
	const open = [];
	for (let i = 0; i < STREAMS; i++) {
		const who = streamers[Math.floor(i / PER_USER)];
		open.push(
			i % 2
				? await sse(url, who, "bench-live", arrived("sse"))
				: await socket(url, who, "bench-live", arrived("socket")),
		);
	}
	const { uuid: twin } = await call(url, secret, "POST", "/twins", {});
	await call(url, secret, "POST", `/twins/${twin}/ledgers/personal`, {
		entries: { level: { value: -1, publish: { "bench-live": "true" } } },
	});
	const writes = [];
	for (let i = 0; i < WRITES; i++) {
		const before = seen.socket.length + seen.sse.length;
		const start = performance.now();
		started.set(i, start);
		await call(url, secret, "PATCH", `/twins/${twin}/ledgers/personal/value`, { entries: { level: { value: i } } });
		writes.push(performance.now() - start);
		// Until every stream has this write's message (or a second has passed).
		for (let wait = 0; seen.socket.length + seen.sse.length < before + STREAMS && wait < 1000; wait++)
			await new Promise((r) => setTimeout(r, 1));
	}
	for (const stream of open) stream.close();
	const all = [...seen.socket, ...seen.sse];
	return {
		streams: STREAMS,
		writes: WRITES,
		expected: STREAMS * WRITES,
		received: all.length,
		write_answer: summary(writes),
		all: summary(all),
		websocket: summary(seen.socket),
		sse: summary(seen.sse),
	};
}

// The runtime's resident memory as `count` idle streams open, read after each fifth of them: the
// slope of a least-squares line through the readings is the memory per stream (a single before
// and after moves by tens of MB with what the allocator keeps or gives back).
async function idleMemory(url, streamers, count, open) {
	const settle = () => new Promise((r) => setTimeout(r, 2000));
	await settle();
	const readings = [[0, runtimeMemory()]];
	const streams = [];
	for (let step = 1; step <= 5; step++) {
		while (streams.length < (count * step) / 5)
			streams.push(await open(url, streamers[Math.floor(streams.length / PER_USER)], "bench-idle"));
		await settle();
		readings.push([streams.length, runtimeMemory()]);
	}
	for (const stream of streams) stream.close();
	const n = readings.length;
	const mx = readings.reduce((a, [x]) => a + x, 0) / n;
	const my = readings.reduce((a, [, y]) => a + y, 0) / n;
	const slope =
		readings.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0) / readings.reduce((a, [x]) => a + (x - mx) ** 2, 0);
	return {
		streams: count,
		before_mb: +(readings[0][1] / MB).toFixed(1),
		after_mb: +(readings.at(-1)[1] / MB).toFixed(1),
		kb_per_stream: +(slope / 1000).toFixed(1),
	};
}

// A fleet: 1000 drivers of one Driver role (a twin rule, `TWIN.driver == user`), each streaming
// the fleet's topic and seeing his own van only, and 100 dispatcher streams of the
// administrator's role seeing every van. Each write reports on one van: its message reaches
// its driver, filtered, and every dispatcher, whole. From the start of the write to each
// stream's receipt, drivers and dispatchers apart; and whether a driver ever got another's van.
const DRIVERS = 1000;
const DISPATCHERS = 100;
const FLEET_WRITES = 200;

async function fleet(url, secret, dispatchers) {
	const role = await call(url, secret, "POST", "/roles", {
		name: "Driver",
		statement: { effect: "deny", actions: null },
		rules: { twin: "TWIN.driver == user", entry: null, identity: null },
	});
	const drivers = await users(url, secret, DRIVERS, role.uuid, 11);
	const vans = [];
	for (const driver of drivers)
		vans.push((await call(url, secret, "POST", "/twins", { description: { driver: driver.user } })).uuid);
	const started = new Map();
	const seen = { driver: [], dispatcher: [] };
	let wrong = 0;
	const arrived = (kind, van) => (message) => {
		if (van !== undefined && message.twin !== van) wrong++;
		const start = started.get(message.event.level.new_value);
		if (start !== undefined) seen[kind].push(performance.now() - start);
	};
	const open = [];
	for (let i = 0; i < DRIVERS; i++)
		open.push(await socket(url, drivers[i].secret, "bench-fleet", arrived("driver", vans[i])));
	for (let i = 0; i < DISPATCHERS; i++)
		open.push(await socket(url, dispatchers[Math.floor(i / PER_USER)], "bench-fleet", arrived("dispatcher")));
	for (const van of vans)
		await call(url, secret, "POST", `/twins/${van}/ledgers/personal`, { entries: { level: { value: -1 } } });
	const publishing = { level: { value: 0, publish: { "bench-fleet": "true" } } };
	const writes = [];
	for (let i = 0; i < FLEET_WRITES; i++) {
		const van = vans[(i * 7919) % vans.length];
		const before = seen.driver.length + seen.dispatcher.length;
		const start = performance.now();
		started.set(i, start);
		await call(url, secret, "PATCH", `/twins/${van}/ledgers/personal`, {
			entries: { level: { ...publishing.level, value: i } },
		});
		writes.push(performance.now() - start);
		for (let wait = 0; seen.driver.length + seen.dispatcher.length < before + 1 + DISPATCHERS && wait < 2000; wait++)
			await new Promise((r) => setTimeout(r, 1));
	}
	for (const stream of open) stream.close();
	return {
		drivers: DRIVERS,
		dispatchers: DISPATCHERS,
		writes: FLEET_WRITES,
		// Each driver is a group of his own (the rule reads `user`), the dispatchers none: a
		// message costs 1000 groups x (1 + 1 entry) evaluations, by the design.
		groups: DRIVERS,
		evaluations_per_message: DRIVERS * 2,
		expected: FLEET_WRITES * (1 + DISPATCHERS),
		received: seen.driver.length + seen.dispatcher.length,
		another_drivers_van: wrong,
		write_answer: summary(writes),
		driver: summary(seen.driver),
		dispatcher: summary(seen.dispatcher),
	};
}

export async function benchStreams(url, secret) {
	const streamers = (await users(url, secret, Math.max(STREAMS, IDLE_SOCKETS) / PER_USER)).map((made) => made.secret);
	const unheard = await alone(url, secret);
	const live = { ...(await latency(url, secret, streamers)), write_answer_without_streams: unheard };
	const filtered = await fleet(url, secret, streamers);
	// SSE first: the runtime keeps some of what 1000 closed WebSockets held, which would hide
	// what 500 SSE streams take.
	const idleSse = await idleMemory(url, streamers, IDLE_SSE, sse);
	const idleSockets = await idleMemory(url, streamers, IDLE_SOCKETS, socket);
	return { live, filtered, idle: { websocket: idleSockets, sse: idleSse } };
}

export function printStreams(result) {
	const { live, filtered, idle } = result;
	console.log(
		`\nlive streams: ${live.streams} open (half WebSocket, half SSE), ${live.writes} ledger writes one at a time, each publishing to their topic`,
	);
	const without = live.write_answer_without_streams;
	console.log(
		`messages received ${live.received} of ${live.expected}; the write answered p50 ${live.write_answer.p50_ms} ms, p95 ${live.write_answer.p95_ms} ms (with no stream open: p50 ${without.p50_ms} ms, p95 ${without.p95_ms} ms)\n`,
	);
	console.log("| from the write's start to the stream | samples | p50 ms | p95 ms | max ms |");
	console.log("|---|---|---|---|---|");
	for (const [name, s] of [
		["every stream", live.all],
		["WebSocket", live.websocket],
		["SSE", live.sse],
	]) {
		console.log(`| ${name} | ${s.samples} | ${s.p50_ms} | ${s.p95_ms} | ${s.max_ms} |`);
	}
	console.log(
		`\nfiltered: ${filtered.drivers} driver WebSockets (one group each, ${filtered.evaluations_per_message} evaluations a message) and ${filtered.dispatchers} dispatcher WebSockets, ${filtered.writes} writes on one van each`,
	);
	console.log(
		`messages received ${filtered.received} of ${filtered.expected}; another driver's van: ${filtered.another_drivers_van}; the write answered p50 ${filtered.write_answer.p50_ms} ms, p95 ${filtered.write_answer.p95_ms} ms\n`,
	);
	console.log("| from the write's start to the stream | samples | p50 ms | p95 ms | max ms |");
	console.log("|---|---|---|---|---|");
	for (const [name, s] of [
		["driver (filtered)", filtered.driver],
		["dispatcher (whole)", filtered.dispatcher],
	]) {
		console.log(`| ${name} | ${s.samples} | ${s.p50_ms} | ${s.p95_ms} | ${s.max_ms} |`);
	}
	console.log("\n| idle streams | count | runtime memory before, MB | after, MB | per stream (slope), KB |");
	console.log("|---|---|---|---|---|");
	for (const [name, s] of [
		["WebSocket", idle.websocket],
		["SSE", idle.sse],
	]) {
		console.log(`| ${name} | ${s.streams} | ${s.before_mb} | ${s.after_mb} | ${s.kb_per_stream} |`);
	}
}

// The notifications part of `npm run bench`: write-to-receipt latency of ledger notifications
// delivered to a local receiver (one subscription, one value change at a time), and the
// fan-out of one write to 100 confirmed subscriptions of a topic. Times are wall clock on this
// machine, through the local queue (its max_batch_timeout included).
import { call } from "./api.mjs";
import { createServer } from "node:http";

const SAMPLES = 100;
const FAN_OUT = 100;

// Token URLs are rate limited per client address (30 a minute); confirming 100 subscriptions
// from one address would wait minutes, so each confirmation names its own (local) address,
// and waits when the limit answers anyway.
async function confirm(url) {
	for (let i = 0; i < 120; i++) {
		const address = `10.${Array.from({ length: 3 }, () => Math.floor(Math.random() * 256)).join(".")}`;
		const res = await fetch(url, { headers: { "cf-connecting-ip": address } });
		if (res.status !== 429) return;
		await new Promise((resolve) => setTimeout(resolve, 1000));
	}
}

// A receiver on 127.0.0.1 that confirms what asks to be confirmed and hands each notification
// to whoever waits for its subscription.
async function startReceiver() {
	const waiting = new Map();
	const arrived = [];
	const server = createServer(async (req, res) => {
		let body = "";
		for await (const chunk of req) body += chunk;
		res.writeHead(200).end();
		const at = performance.now();
		const message = JSON.parse(body);
		if (message.type === "Confirmation") return void confirm(message.confirmation_url);
		arrived.push({ at, message });
		for (const [test, resolve] of waiting) {
			if (test(message)) {
				waiting.delete(test);
				resolve(at);
			}
		}
	});
	await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
	const url = `http://127.0.0.1:${server.address().port}`;
	const next = (test) =>
		new Promise((resolve, reject) => {
			waiting.set(test, resolve);
			setTimeout(() => reject(new Error("no notification within 60 s")), 60_000).unref();
		});
	return { url, arrived, next, close: () => server.close() };
}

async function confirmedSubscriptions(url, secret, receiver, topic, count) {
	const uuids = [];
	for (let i = 0; i < count; i++) {
		const answer = await call(url, secret, "POST", "/notifications/webhooks", {
			topic,
			callback_url: `${receiver.url}/${topic}/${i}`,
		});
		uuids.push(answer.subscription.uuid);
	}
	for (let i = 0; i < 600; i++) {
		const { subscriptions } = await call(url, secret, "GET", `/notifications/webhooks?topic=${topic}&status=confirmed`);
		if (Object.keys(subscriptions).length === count) return uuids;
		await new Promise((resolve) => setTimeout(resolve, 200));
	}
	throw new Error(`the ${count} subscriptions to ${topic} were not all confirmed`);
}

const percentile = (sorted, p) => +sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))].toFixed(1);

export async function benchNotifications(url, secret) {
	const receiver = await startReceiver();
	try {
		const twin = (await call(url, secret, "POST", "/twins", {})).uuid;
		const path = `/twins/${twin}/ledgers/personal`;

		await confirmedSubscriptions(url, secret, receiver, "latency", 1);
		await call(url, secret, "POST", path, { entries: { reading: { value: -1, publish: { latency: "true" } } } });
		await receiver.next((m) => m.event.reading?.new_value === -1);
		const latencies = [];
		for (let i = 0; i < SAMPLES; i++) {
			const arrival = receiver.next((m) => m.event.reading?.new_value === i);
			const start = performance.now();
			await call(url, secret, "PATCH", `${path}/value`, { entries: { reading: { value: i } } });
			latencies.push((await arrival) - start);
		}
		latencies.sort((a, b) => a - b);

		await confirmedSubscriptions(url, secret, receiver, "fan-out", FAN_OUT);
		const before = receiver.arrived.length;
		const start = performance.now();
		await call(url, secret, "POST", path, { entries: { burst: { value: 1, publish: { "fan-out": "true" } } } });
		const written = performance.now() - start;
		for (let i = 0; i < 1200 && receiver.arrived.length - before < FAN_OUT; i++)
			await new Promise((resolve) => setTimeout(resolve, 50));
		const fanned = receiver.arrived.slice(before).filter((a) => a.message.subscription.topic === "fan-out");
		if (fanned.length < FAN_OUT) throw new Error(`only ${fanned.length} of ${FAN_OUT} fan-out messages arrived`);
		const last = Math.max(...fanned.map((a) => a.at)) - start;
		return {
			latency: { samples: SAMPLES, p50_ms: percentile(latencies, 0.5), p99_ms: percentile(latencies, 0.99) },
			fan_out: { subscriptions: FAN_OUT, write_ms: +written.toFixed(1), all_received_ms: +last.toFixed(1) },
		};
	} finally {
		receiver.close();
	}
}

export function printNotifications(result) {
	const { latency, fan_out } = result;
	console.log(
		`\nnotifications: write-to-receipt latency of ${latency.samples} value changes, one at a time, to a local receiver`,
	);
	console.log(`p50 ${latency.p50_ms} ms, p99 ${latency.p99_ms} ms`);
	console.log(
		`fan-out of one write to ${fan_out.subscriptions} subscriptions of one topic: the write answered in ${fan_out.write_ms} ms, all ${fan_out.subscriptions} messages received after ${fan_out.all_received_ms} ms`,
	);
}

// The write-ceiling part of `npm run bench` (`-- --only writes` runs it alone): how many writes a
// second one account takes. Every ledger write runs in the account's object, one at a time, each
// one D1 batch (docs/design.md), so an account's writes cannot go faster than that object can
// run them one after another. Writers update their own twin's ledger entry (a new value each
// time, so every write commits), in closed loops for a few seconds: 1, 8 and 32 writers on one
// account, then 16 on each of two accounts. When two accounts together go no faster than one,
// the machine, not the object, is what stops them.
//
// D1 round trips per write, two ways. Each answer's Server-Timing counts those the write waited
// for (`calls`: the credential's in the Worker, then the object's). The server this part runs
// on (d1-delay/entry.ts) also counts every D1 call the Worker and its objects make, work done
// after the answer included; that total over the writes done is the second figure, where a
// write that shares a batch with others counts its share of it.
//
// A local D1 answers in well under a millisecond, where a deployed one takes several to tens:
// the one-account runs are made again with a delay before every D1 call, and the ratio of the
// two rates says how much of the rate is owed to round trips being nearly free here.
import { call } from "./api.mjs";

const SECONDS = 8;
export const DELAY_MS = 20;
const WRITERS = [1, 8, 32];

async function writers(url, secret, count) {
	const twins = [];
	for (let i = 0; i < count; i++) {
		const twin = (await call(url, secret, "POST", "/twins", {})).uuid;
		await call(url, secret, "POST", `/twins/${twin}/ledgers/personal`, { entries: { v: { value: 0 } } });
		twins.push(twin);
	}
	return twins;
}

// The server's count of D1 calls ({calls, delay_ms, by: {origin: n}}), or with `delayMs` its
// delay set first.
async function d1(url, delayMs) {
	const res = await fetch(`${url}/__bench/d1${delayMs === undefined ? "" : `?delay_ms=${delayMs}`}`, {
		method: delayMs === undefined ? "GET" : "POST",
	});
	if (res.status !== 200)
		throw new Error(`/__bench/d1 answered ${res.status}: the writes part needs the server of d1-delay/entry.ts`);
	return res.json();
}

// The count once it holds still for half a second: the work the writes left after their answers
// (waitUntil, the objects' drains) counts with their run, not the next.
async function settled(url) {
	let last = await d1(url);
	for (let i = 0; i < 20; i++) {
		await new Promise((resolve) => setTimeout(resolve, 500));
		const now = await d1(url);
		if (now.calls === last.calls) return now;
		last = now;
	}
	return last;
}

// Closed loops, one per twin, until the deadline: writes per second and latency percentiles.
async function hammer(url, groups) {
	const deadline = performance.now() + SECONDS * 1000;
	const latencies = [];
	let failed = 0;
	let calls = 0;
	const loop = async (secret, twin) => {
		for (let i = 1; performance.now() < deadline; i++) {
			const start = performance.now();
			const res = await fetch(`${url}/twins/${twin}/ledgers/personal/value`, {
				method: "PATCH",
				headers: { authorization: secret, "content-type": "application/json" },
				body: JSON.stringify({ entries: { v: { value: i } } }),
			});
			await res.arrayBuffer();
			if (res.status === 200) {
				latencies.push(performance.now() - start);
				calls += Number(/calls=(\d+)/.exec(res.headers.get("server-timing") ?? "")?.[1] ?? Number.NaN);
			} else failed++;
		}
	};
	const started = performance.now();
	await Promise.all(groups.flatMap(({ secret, twins }) => twins.map((twin) => loop(secret, twin))));
	const seconds = (performance.now() - started) / 1000;
	latencies.sort((a, b) => a - b);
	const at = (p) => +latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))].toFixed(2);
	return {
		writes: latencies.length,
		failed,
		writes_per_second: +(latencies.length / seconds).toFixed(1),
		d1_calls_per_write: +(calls / latencies.length).toFixed(2),
		p50_ms: at(50),
		p99_ms: at(99),
	};
}

// One run at a delay: the writes' figures, and every D1 call the server made meanwhile over the
// writes done, with the calls by origin (the Worker, each object class).
async function measure(url, groups, delayMs) {
	await settled(url);
	await d1(url, delayMs);
	const before = await d1(url);
	const run = await hammer(url, groups);
	const after = await settled(url);
	const byOrigin = Object.fromEntries(
		Object.entries(after.by)
			.map(([origin, n]) => [origin, n - before.by[origin]])
			.filter(([, n]) => n > 0),
	);
	// The Worker reads a count its objects add to only while they share its isolate; an account
	// object that wrote and added nothing would leave the figure short of the objects' calls.
	if (run.writes > 0 && !byOrigin.AccountDO)
		throw new Error("The D1 calls of the account's object were not counted: the objects run apart from the Worker");
	return {
		delay_ms: delayMs,
		writes: run.writes,
		writes_per_second: run.writes_per_second,
		d1_calls_per_write: run.d1_calls_per_write,
		d1_calls_per_write_all: +((after.calls - before.calls) / run.writes).toFixed(2),
		p50_ms: run.p50_ms,
		p99_ms: run.p99_ms,
		failed: run.failed,
		d1_calls: byOrigin,
	};
}

export async function benchWrites(url, accounts) {
	const [first, second] = accounts;
	await d1(url, 0);
	const one = await writers(url, first.secret, 32);
	const other = await writers(url, second.secret, 16);
	const runs = [];
	for (const delay of [0, DELAY_MS]) {
		for (const count of WRITERS) {
			runs.push({
				accounts: 1,
				writers: count,
				...(await measure(url, [{ secret: first.secret, twins: one.slice(0, count) }], delay)),
			});
		}
	}
	runs.push({
		accounts: 2,
		writers: 32,
		...(await measure(
			url,
			[
				{ secret: first.secret, twins: one.slice(0, 16) },
				{ secret: second.secret, twins: other },
			],
			0,
		)),
	});
	await d1(url, 0);
	const rate = (count, delay) =>
		runs.find((r) => r.accounts === 1 && r.writers === count && r.delay_ms === delay).writes_per_second;
	const delayed = WRITERS.map((count) => ({
		writers: count,
		ratio: +(rate(count, DELAY_MS) / rate(count, 0)).toFixed(3),
	}));
	return { seconds: SECONDS, delay_ms: DELAY_MS, runs, delayed };
}

export function printWrites(result) {
	console.log(
		`\nledger writes through one account's object (PATCH .../value, a new value each, closed loops for ${result.seconds} s)\n`,
	);
	console.log(
		"| accounts | writers | delay ms | writes | writes/s | D1 calls per write (Server-Timing) | D1 calls per write (all) | p50 ms | p99 ms | failed |",
	);
	console.log("|---|---|---|---|---|---|---|---|---|---|");
	for (const r of result.runs)
		console.log(
			`| ${r.accounts} | ${r.writers} | ${r.delay_ms} | ${r.writes} | ${r.writes_per_second} | ${r.d1_calls_per_write} | ${r.d1_calls_per_write_all} | ${r.p50_ms} | ${r.p99_ms} | ${r.failed} |`,
		);
	console.log(`\nwrites/s with ${result.delay_ms} ms before every D1 call, over writes/s without (one account):`);
	for (const { writers, ratio } of result.delayed)
		console.log(`  ${writers} writer${writers === 1 ? "" : "s"}: ${ratio}x`);
}

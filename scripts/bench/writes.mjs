// The write-ceiling part of `npm run bench` (`-- --only writes` runs it alone): how many writes a
// second one account takes. Every ledger write runs in the account's object, one at a time, each
// one D1 batch (docs/design.md), so an account's writes cannot go faster than that object can
// run them one after another. Writers update their own twin's ledger entry (a new value each
// time, so every write commits), in closed loops for a few seconds: 1, 8 and 32 writers on one
// account, then 16 on each of two accounts. When two accounts together go no faster than one,
// the machine, not the object, is what stops them. Each answer's Server-Timing counts the D1
// round trips the write took (`calls`: the credential's in the Worker, then the object's).
import { call } from "./api.mjs";

const SECONDS = 8;

async function writers(url, secret, count) {
	const twins = [];
	for (let i = 0; i < count; i++) {
		const twin = (await call(url, secret, "POST", "/twins", {})).uuid;
		await call(url, secret, "POST", `/twins/${twin}/ledgers/personal`, { entries: { v: { value: 0 } } });
		twins.push(twin);
	}
	return twins;
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

export async function benchWrites(url, accounts) {
	const [first, second] = accounts;
	const one = await writers(url, first.secret, 32);
	const other = await writers(url, second.secret, 16);
	const runs = [];
	for (const count of [1, 8, 32]) {
		runs.push({
			accounts: 1,
			writers: count,
			...(await hammer(url, [{ secret: first.secret, twins: one.slice(0, count) }])),
		});
	}
	runs.push({
		accounts: 2,
		writers: 32,
		...(await hammer(url, [
			{ secret: first.secret, twins: one.slice(0, 16) },
			{ secret: second.secret, twins: other },
		])),
	});
	return { seconds: SECONDS, runs };
}

export function printWrites(result) {
	console.log(
		`\nledger writes through one account's object (PATCH .../value, a new value each, closed loops for ${result.seconds} s)\n`,
	);
	console.log("| accounts | writers | writes | writes/s | D1 round trips per write | p50 ms | p99 ms | failed |");
	console.log("|---|---|---|---|---|---|---|---|");
	for (const r of result.runs)
		console.log(
			`| ${r.accounts} | ${r.writers} | ${r.writes} | ${r.writes_per_second} | ${r.d1_calls_per_write} | ${r.p50_ms} | ${r.p99_ms} | ${r.failed} |`,
		);
}

// A closed-loop HTTP load generator, run as its own process: `node load-client.mjs CONFIG_JSON`.
// CONFIG: { url, seconds, concurrency, requests: [{ method, path, headers, body, weight }] }.
// Prints one JSON line: requests, errors by status, p50 and p99 latency, requests per second.
const config = JSON.parse(process.argv[2]);
const deadline = Date.now() + config.seconds * 1000;
const latencies = [];
const statuses = {};
const totalWeight = config.requests.reduce((sum, r) => sum + (r.weight ?? 1), 0);

function pick() {
	let roll = Math.random() * totalWeight;
	for (const request of config.requests) {
		roll -= request.weight ?? 1;
		if (roll <= 0) return request;
	}
	return config.requests[0];
}

async function loop() {
	while (Date.now() < deadline) {
		const { method = "GET", path, headers, body } = pick();
		const start = performance.now();
		let status = "network";
		try {
			const res = await fetch(config.url + path, { method, headers, body });
			await res.arrayBuffer();
			status = res.status;
		} catch {}
		latencies.push(performance.now() - start);
		statuses[status] = (statuses[status] ?? 0) + 1;
	}
}

const started = performance.now();
await Promise.all(Array.from({ length: config.concurrency }, loop));
const elapsed = (performance.now() - started) / 1000;
latencies.sort((a, b) => a - b);
const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0;
console.log(
	JSON.stringify({
		requests: latencies.length,
		statuses,
		p50_ms: +at(0.5).toFixed(2),
		p99_ms: +at(0.99).toFixed(2),
		requests_per_second: +(latencies.length / elapsed).toFixed(1),
	}),
);

// The ledger part of `npm run bench`: a 64 KiB ledger read whole, and one entry written into
// it, with and without history. D1 rows read and written per call come from Server-Timing.

import { timed } from "./api.mjs";
const SAMPLES = 100;
const ENTRIES = 64;

function summary(samples) {
	const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
	return {
		rows_read: Math.max(...samples.map((s) => s.rowsRead)),
		rows_written: Math.max(...samples.map((s) => s.rowsWritten)),
		p50_ms: +ms[Math.floor(ms.length / 2)].toFixed(2),
		p99_ms: +ms[Math.floor(ms.length * 0.99)].toFixed(2),
	};
}

export async function benchLedger(url, secret) {
	const twin = (await timed(url, secret, "POST", "/twins", {})).answer.uuid;
	const path = `/twins/${twin}/ledgers/personal`;
	// 64 entries of about 1 KiB each, filling the ledger close to its 64 KiB limit.
	const filler = (i) => `${i}`.padEnd(1000, "x");
	for (let part = 0; part < ENTRIES; part += 32) {
		const entries = Object.fromEntries(
			Array.from({ length: 32 }, (_, j) => [`e${part + j}`, { value: filler(part + j) }]),
		);
		await timed(url, secret, "POST", path, { entries });
	}
	await timed(url, secret, "PATCH", path, { entries: { e1: { history: "INF" } } });
	const size = new TextEncoder().encode(
		JSON.stringify(
			Object.fromEntries(
				Object.entries((await timed(url, secret, "GET", `${path}/value`)).answer.entries).map(([k, v]) => [k, v.value]),
			),
		),
	).length;

	const runs = {
		[`read the whole ledger (GET ${"/twins/{twin}/ledgers/personal"})`]: () => timed(url, secret, "GET", path),
		"write one entry without history (PATCH .../value)": (i) =>
			timed(url, secret, "PATCH", `${path}/value`, { entries: { e0: { value: filler(i) } } }),
		"write one entry with history (PATCH .../value)": (i) =>
			timed(url, secret, "PATCH", `${path}/value`, { entries: { e1: { value: filler(i) } } }),
	};
	const calls = {};
	for (const [name, run] of Object.entries(runs)) {
		const samples = [];
		for (let i = 0; i < SAMPLES; i++) samples.push(await run(i));
		calls[name] = summary(samples);
	}
	return { entries: ENTRIES, ledger_bytes: size, samples_per_call: SAMPLES, calls };
}

export function printLedger(result) {
	console.log(
		`\nledgers: one ledger of ${result.entries} entries, ${result.ledger_bytes} bytes as compact JSON (${result.samples_per_call} calls each)\n`,
	);
	console.log("| call | rows read | rows written | p50 ms | p99 ms |");
	console.log("|---|---|---|---|---|");
	for (const [name, s] of Object.entries(result.calls))
		console.log(`| ${name} | ${s.rows_read} | ${s.rows_written} | ${s.p50_ms} | ${s.p99_ms} |`);
}

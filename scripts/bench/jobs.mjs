// The jobs part of `npm run bench` (`-- --only jobs` runs it alone), on a server of its own, with
// three accounts seeded by SQL (docs/benchmarks.md, "Batches and exports"):
// - a batch of 10,000 create_twin lines, uploaded as one NDJSON file, run to `completed`;
// - a batch of 10,000 ledger value updates (update_twin_ledger_entry_value, 1000 seeded twins
//   with an entry each, 10 lines a twin);
// each with its lines/s (from create to `completed`) and, while it runs, one client writing
// ledger values of the same account in a closed loop: the p95 of those interactive writes, against
// the same loop with no batch running;
// - an export of 100,000 seeded twins (twins, identities, ledgers), to `completed`: rows/s, and
//   the runtime's resident memory (its workerd processes) sampled every 100 ms: peak over the
//   idle figure before it.
import { call } from "./api.mjs";
import { runtimeMemory } from "./memory.mjs";
import { accountSeed, twinsSeed } from "./seed.mjs";

const LINES = 10_000;
const LEDGER_TWINS = 1000;
const EXPORT_TWINS = 100_000;
// How long the interactive loop runs alone, as the baseline.
const BASELINE_SECONDS = 5;
const POLL_MS = 250;
const TERMINAL = ["hash_mismatch", "validation_failed", "completed", "cancelled"];

const at = (sorted, share) => +sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))].toFixed(2);

export function jobsSeed() {
	const creates = accountSeed("bench-batch-creates");
	const ledgers = accountSeed("bench-batch-ledgers");
	const exports = accountSeed("bench-export");
	const sql = `${creates.sql}
${ledgers.sql}
${exports.sql}
${twinsSeed(ledgers.uuid, LEDGER_TWINS + 1, "json_object('i', i)")}
UPDATE accounts SET twins = ${LEDGER_TWINS + 1} WHERE uuid = '${ledgers.uuid}';
INSERT INTO ledger_entries (twin, account, name, value, size, visibility, history, publish, entry_created_ts, entry_updated_ts, value_changed_ts)
SELECT uuid, '${ledgers.uuid}', 'reading', '0', 12, NULL, NULL, NULL, 1, 1, 1 FROM twins WHERE owner = '${ledgers.uuid}';
${twinsSeed(exports.uuid, EXPORT_TWINS, "json_object('i', i, 'site', CASE i % 3 WHEN 0 THEN 'north' ELSE 'south' END)")}
UPDATE accounts SET twins = ${EXPORT_TWINS} WHERE uuid = '${exports.uuid}';
`;
	return { creates, ledgers, exports, sql };
}

// The account's twins, in uuid order (a scan, 1000 a page).
async function twinsOf(url, secret) {
	const twins = [];
	let cursor = null;
	do {
		const page = await call(url, secret, "GET", `/twins?count=1000${cursor ? `&cursor=${cursor}` : ""}`);
		twins.push(...page.twins);
		cursor = page.cursor;
	} while (cursor);
	return twins;
}

// Uploads the NDJSON text and makes a batch of it.
async function fileBatch(url, secret, operation, text) {
	const { handler, url: upload } = await call(url, secret, "POST", "/cache", {});
	const put = await fetch(upload, { method: "PUT", body: text, headers: { "content-type": "application/x-ndjson" } });
	if (put.status !== 200) throw new Error(`upload: ${put.status} ${await put.text()}`);
	return call(url, secret, "POST", "/batches", { operation, handler });
}

// Polls a job until it ends; answers its last record and the seconds from `started`.
async function untilEnded(url, secret, path, started, onPoll = () => {}) {
	for (;;) {
		const record = await call(url, secret, "GET", path);
		onPoll();
		if (TERMINAL.includes(record.status)) return { record, seconds: (performance.now() - started) / 1000 };
		await new Promise((resolve) => setTimeout(resolve, POLL_MS));
	}
}

// One client writing a ledger value in a closed loop until `stop()`: its latencies.
function interactive(url, secret, twin) {
	const latencies = [];
	let running = true;
	const done = (async () => {
		for (let i = 1; running; i++) {
			const start = performance.now();
			const res = await fetch(`${url}/twins/${twin}/ledgers/personal/value`, {
				method: "PATCH",
				headers: { authorization: secret, "content-type": "application/json" },
				body: JSON.stringify({ entries: { reading: { value: -i } } }),
			});
			await res.arrayBuffer();
			if (res.status !== 200) throw new Error(`interactive write: ${res.status}`);
			latencies.push(performance.now() - start);
		}
	})();
	return {
		async stop() {
			running = false;
			await done;
			latencies.sort((a, b) => a - b);
			return { writes: latencies.length, p50_ms: at(latencies, 0.5), p95_ms: at(latencies, 0.95) };
		},
	};
}

async function baseline(url, secret, twin) {
	const loop = interactive(url, secret, twin);
	await new Promise((resolve) => setTimeout(resolve, BASELINE_SECONDS * 1000));
	return loop.stop();
}

// A batch run to its end, with the interactive loop beside it.
async function measuredBatch(url, account, operation, lines, twin) {
	const text = lines.map((line) => `${JSON.stringify(line)}\n`).join("");
	const started = performance.now();
	const made = await fileBatch(url, account.secret, operation, text);
	const loop = interactive(url, account.secret, twin);
	const { record, seconds } = await untilEnded(url, account.secret, `/batches/${made.batch}`, started);
	const writes = await loop.stop();
	if (record.status !== "completed" || record.progress.succeeded !== lines.length)
		throw new Error(`${operation} batch ended ${record.status}: ${JSON.stringify(record.progress)}`);
	return {
		operation,
		lines: lines.length,
		input_bytes: text.length,
		seconds: +seconds.toFixed(1),
		lines_per_second: +(lines.length / seconds).toFixed(1),
		interactive: writes,
	};
}

async function benchExport(url, account) {
	const idle = runtimeMemory();
	let peak = idle;
	const sampler = setInterval(() => {
		peak = Math.max(peak, runtimeMemory());
	}, 100);
	const started = performance.now();
	try {
		const made = await call(url, account.secret, "POST", "/exports", {});
		const { record, seconds } = await untilEnded(url, account.secret, `/exports/${made.export}`, started);
		if (record.status !== "completed" || record.progress.exported !== EXPORT_TWINS)
			throw new Error(`export ended ${record.status}: ${JSON.stringify(record.progress)}`);
		const files = Object.fromEntries(
			Object.entries(record.files).map(([name, f]) => [name, { lines: f.lines, bytes: f.bytes }]),
		);
		return {
			twins: EXPORT_TWINS,
			seconds: +seconds.toFixed(1),
			rows_per_second: +(EXPORT_TWINS / seconds).toFixed(1),
			files,
			idle_memory_mb: +(idle / 2 ** 20).toFixed(1),
			peak_memory_mb: +(peak / 2 ** 20).toFixed(1),
		};
	} finally {
		clearInterval(sampler);
	}
}

export async function benchJobs(url, seeded) {
	const { creates, ledgers, exports } = seeded;
	const ledgerTwins = await twinsOf(url, ledgers.secret);
	// The interactive loop writes the last twin; the batch the first 1000.
	const [loopTwin] = ledgerTwins.splice(LEDGER_TWINS, 1);
	const createTwin = await call(url, creates.secret, "POST", "/twins", {});
	await call(url, creates.secret, "POST", `/twins/${createTwin.uuid}/ledgers/personal`, {
		entries: { reading: { value: 0 } },
	});
	const alone = {
		creates: await baseline(url, creates.secret, createTwin.uuid),
		ledgers: await baseline(url, ledgers.secret, loopTwin),
	};
	const createLines = Array.from({ length: LINES }, (_, i) => ({ body: { description: { i } } }));
	const created = await measuredBatch(url, creates, "create_twin", createLines, createTwin.uuid);
	const updateLines = Array.from({ length: LINES }, (_, i) => ({
		params: { twin: ledgerTwins[i % LEDGER_TWINS], ledger: "personal" },
		body: { entries: { reading: { value: i } } },
	}));
	const updated = await measuredBatch(url, ledgers, "update_twin_ledger_entry_value", updateLines, loopTwin);
	return {
		batches: [
			{ ...created, interactive_alone: alone.creates },
			{ ...updated, interactive_alone: alone.ledgers },
		],
		export: await benchExport(url, exports),
	};
}

export function printJobs(result) {
	console.log(
		"\nbatches of 10,000 lines, from create to completed, with one client writing ledger values of the same account in a closed loop beside them\n",
	);
	console.log("| operation | lines | seconds | lines/s | interactive writes p50 / p95 ms (alone) | during the batch |");
	console.log("|---|---|---|---|---|---|");
	for (const b of result.batches)
		console.log(
			`| ${b.operation} | ${b.lines} | ${b.seconds} | ${b.lines_per_second} | ${b.interactive_alone.p50_ms} / ${b.interactive_alone.p95_ms} | ${b.interactive.p50_ms} / ${b.interactive.p95_ms} (${b.interactive.writes} writes) |`,
		);
	const e = result.export;
	console.log(`\nan export of ${e.twins} twins (twins, identities, ledgers), from create to completed\n`);
	console.log("| seconds | rows/s | runtime memory idle MB | peak MB | files |");
	console.log("|---|---|---|---|---|");
	console.log(
		`| ${e.seconds} | ${e.rows_per_second} | ${e.idle_memory_mb} | ${e.peak_memory_mb} | ${Object.entries(e.files)
			.map(([name, f]) => `${name}: ${f.lines} lines, ${f.bytes} bytes`)
			.join("; ")} |`,
	);
}

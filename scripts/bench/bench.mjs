// `npm run bench`: seeds a local account with 100,000 twins, then measures scan_twins at the
// start, middle and end of the account (rows read from Server-Timing, latency p50 and p99),
// and the throughput of GET /twins?count=100&details=true under load from a second process;
// then reads and writes a 64 KiB ledger (ledger.mjs), measures notifications
// (notifications.mjs), a 50 MB doc's upload and download (docs.mjs) and Indexes tables
// (indexes.mjs: ledger writes with 0, 1 and 10 tables, a table of 100,000 rows built and
// queried) and live streams (streams.mjs: write-to-stream latency with 100 streams open,
// memory per idle stream), one account's write ceiling (writes.mjs) and Timeseries tables
// (timeseries.mjs: points/s through ledger writes with 1, 8 and 32 writers, queries over a
// million points with and without rollups, stored bytes per point), batches and exports
// (jobs.mjs: 10,000 lines of create_twin and of ledger value updates with interactive writes
// beside them, an export of 100,000 twins), profiles a new isolate's
// startup against a bare Worker's (startup.mjs), two shards against one (shards.mjs, servers of
// its own), and last runs the side-by-side comparison (compare.mjs). The writes part runs on a
// server of its own too, on the bench's Worker entry (d1-delay/entry.ts: the product with every
// D1 call counted and, when asked, delayed), and so does the timeseries part, on another
// (timeseries-seed/entry.ts: the product with a route that seeds chunk objects directly); the
// other parts measure the product's own build, which those entries would change (one bundle, a
// wrapper on every D1 call). Prints tables and writes bench/results.json. `-- --only ledger`,
// `-- --only notifications`, `-- --only docs`, `-- --only indexes`, `-- --only streams`,
// `-- --only writes`, `-- --only timeseries`, `-- --only jobs`, `-- --only startup` or `-- --only shards` runs that
// part alone; `-- --port N` serves on N.
import { execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseCli } from "../cli.mjs";
import { benchDocs, printDocs } from "./docs.mjs";
import { benchIndexes, indexesSeed, printIndexes } from "./indexes.mjs";
import { benchLedger, printLedger } from "./ledger.mjs";
import { benchNotifications, printNotifications } from "./notifications.mjs";
import { benchStreams, printStreams } from "./streams.mjs";
import { benchStartup, printStartup } from "./startup.mjs";
import { benchTimeseries, printTimeseries } from "./timeseries.mjs";
import { benchWrites, printWrites } from "./writes.mjs";
import { benchShards, printShards } from "./shards.mjs";
import { benchJobs, jobsSeed, printJobs } from "./jobs.mjs";
import { startDevServer } from "../test/dev-server.mjs";
import { accountSeed, twinsSeed } from "./seed.mjs";
import { wranglerDone } from "../wrangler.mjs";

const PARTS = [
	"ledger",
	"notifications",
	"docs",
	"indexes",
	"streams",
	"writes",
	"timeseries",
	"jobs",
	"startup",
	"shards",
];
const { values: args } = parseCli({
	usage: `
usage: npm run bench [-- options]

Seeds a local account with 100,000 twins and measures scans, load, ledgers, notifications,
docs, indexes, streams, the write ceiling, timeseries tables and startup against a
\`wrangler dev\` of its own, then runs \`npm run bench:compare\`. Prints tables and writes
bench/results.json (docs/benchmarks.md). It takes a long while.

  --only PART   one part alone: ${PARTS.join(", ")}
  --port N      its server's port (default: 8799; the inspector takes N + 1000)
  -h, --help    this text
`,
	options: { only: { type: "string" }, port: { type: "string", default: "8799" } },
});
const TWINS = args.only ? 0 : 100_000;
if (args.only && !PARTS.includes(args.only)) throw new Error(`--only takes one of ${PARTS.join(", ")}`);
const SAMPLES = 100;
const PORT = Number(args.port);
const STATE = ".wrangler/bench-state";
const WRITES_STATE = ".wrangler/bench-writes-state";
const WRITES_ENTRY = fileURLToPath(new URL("./d1-delay/entry.ts", import.meta.url));
const TIMESERIES_STATE = ".wrangler/bench-timeseries-state";
const TIMESERIES_ENTRY = fileURLToPath(new URL("./timeseries-seed/entry.ts", import.meta.url));

mkdirSync("bench", { recursive: true });
// One part alone: its figures under its name in bench/results.json, and its table.
async function only(name, bench, print) {
	const result = await bench();
	writeFileSync("bench/results.json", `${JSON.stringify({ [name]: result }, null, 2)}\n`);
	print(result);
	console.log("\nwritten to bench/results.json");
}

// Startup needs no server: it profiles the bundle. Shards starts servers of its own.
if (args.only === "startup") {
	await only("startup", benchStartup, printStartup);
	process.exit(0);
}
if (args.only === "shards") {
	await only("shards", benchShards, printShards);
	process.exit(0);
}
const { uuid: account, secret, sql: accountSql } = accountSeed("bench");
// A second account, for the write ceiling of two accounts side by side.
const other = accountSeed("bench-writes");
// The timeseries part's: one for ingest, one for the seeded tables.
const timeseriesAccounts = [accountSeed("bench-ts-ingest"), accountSeed("bench-ts-queries")];

// Seeds go into a server's local database with the server running: it applied the migrations.
// DB_0: the seeded accounts have version-4 uuids (seed.mjs), which belong to the first shard.
async function seed(state, name, sql) {
	const file = fileURLToPath(new URL(`../../.wrangler/${name}.sql`, import.meta.url));
	mkdirSync(".wrangler", { recursive: true });
	writeFileSync(file, sql);
	await wranglerDone(["d1", "execute", "DB_0", "--local", "--persist-to", state, "--file", file, "--yes"], {
		stdio: ["ignore", "ignore", "inherit"],
	});
}

// The writes part, on its own server and state with both accounts (the first without twins).
// Alone it serves on --port; in the full run, beside the idle main server, on free ports.
async function writesPart(port) {
	rmSync(WRITES_STATE, { recursive: true, force: true });
	const server = await startDevServer({
		port,
		persistTo: WRITES_STATE,
		inspectorPort: port === undefined ? undefined : port + 1000,
		entry: WRITES_ENTRY,
	});
	try {
		await seed(WRITES_STATE, "bench-writes-seed", `${accountSql}\n${other.sql}\n`);
		return await benchWrites(server.url, [{ secret }, other]);
	} finally {
		server.stop();
	}
}

if (args.only === "writes") {
	await only("writes", () => writesPart(PORT), printWrites);
	process.exit(0);
}

// The timeseries part, on its own server and state, on its own entry, with its two accounts.
async function timeseriesPart(port) {
	rmSync(TIMESERIES_STATE, { recursive: true, force: true });
	const server = await startDevServer({
		port,
		persistTo: TIMESERIES_STATE,
		inspectorPort: port === undefined ? undefined : port + 1000,
		entry: TIMESERIES_ENTRY,
	});
	try {
		await seed(TIMESERIES_STATE, "bench-timeseries-seed", timeseriesAccounts.map((a) => a.sql).join("\n"));
		return await benchTimeseries(server.url, timeseriesAccounts);
	} finally {
		server.stop();
	}
}

if (args.only === "timeseries") {
	await only("timeseries", () => timeseriesPart(PORT), printTimeseries);
	process.exit(0);
}

// The jobs part, on its own server and state, with its three accounts: its export's memory is
// the runtime's alone.
const JOBS_STATE = ".wrangler/bench-jobs-state";
async function jobsPart(port) {
	rmSync(JOBS_STATE, { recursive: true, force: true });
	const server = await startDevServer({
		port,
		persistTo: JOBS_STATE,
		inspectorPort: port === undefined ? undefined : port + 1000,
	});
	try {
		const seeded = jobsSeed();
		await seed(JOBS_STATE, "bench-jobs-seed", seeded.sql);
		return await benchJobs(server.url, seeded);
	} finally {
		server.stop();
	}
}

if (args.only === "jobs") {
	await only("jobs", () => jobsPart(PORT), printJobs);
	process.exit(0);
}
rmSync(STATE, { recursive: true, force: true });
// The indexes part seeds two accounts of its own, in the full run too.
const indexesSeeded = !args.only || args.only === "indexes" ? indexesSeed() : undefined;
const seedSql = `${accountSql}
${twinsSeed(account, TWINS, "json_object('i', i, 'site', CASE i % 3 WHEN 0 THEN 'north' ELSE 'south' END)")}
${indexesSeeded?.sql ?? ""}
`;
// Notifications go to a receiver on this machine.
// The streams part opens 1100 streams of one account on itself, past MAX_STREAMS' 1000.
const server = await startDevServer({
	port: PORT,
	persistTo: STATE,
	inspectorPort: PORT + 1000,
	vars: { CALLBACK_POLICY: "any", MAX_STREAMS: "2000" },
});
try {
	await seed(STATE, "bench-seed", seedSql);
	const headers = { authorization: secret };
	const url = server.url;
	const parts = {
		ledger: [() => benchLedger(url, secret), printLedger],
		notifications: [() => benchNotifications(url, secret), printNotifications],
		docs: [() => benchDocs(url, secret), printDocs],
		indexes: [() => benchIndexes(url, indexesSeeded), printIndexes],
		streams: [() => benchStreams(url, secret), printStreams],
	};
	if (args.only) await only(args.only, ...parts[args.only]);
	else await benchAll(server, headers);
} finally {
	server.stop();
}

// Then two shards against one, each on a server of its own, and the side-by-side comparison
// against a plain Worker.
if (!args.only) {
	const shards = await benchShards();
	printShards(shards);
	const written = JSON.parse(readFileSync("bench/results.json", "utf8"));
	writeFileSync("bench/results.json", `${JSON.stringify({ ...written, shards }, null, 2)}\n`);
	console.log("\nside by side with a plain Worker (npm run bench:compare runs this part alone)\n");
	const compare = spawn(process.execPath, [fileURLToPath(new URL("./compare.mjs", import.meta.url))], {
		stdio: "inherit",
	});
	process.exitCode = await new Promise((resolve) => compare.on("exit", (code) => resolve(code ?? 1)));
}

async function benchAll(server, headers) {
	const get = async (path) => {
		const start = performance.now();
		const res = await fetch(server.url + path, { headers });
		const body = await res.json();
		const ms = performance.now() - start;
		if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`);
		const rowsRead = Number(/rows_read=(\d+)/.exec(res.headers.get("server-timing") ?? "")?.[1]);
		return { body, ms, rowsRead };
	};

	// Cursors at the start, the middle and the end of the account, bound to the measured scan.
	const query = "count=100&details=true";
	const positions = { start: null };
	let cursor = null;
	for (let page = 1; ; page++) {
		const { body } = await get(`/twins?count=1000&details=true${cursor ? `&cursor=${cursor}` : ""}`);
		cursor = body.cursor;
		if (page === TWINS / 2000) positions.middle = cursor;
		if (page === TWINS / 1000 - 1) positions.end = cursor;
		if (!cursor) break;
	}

	const scans = {};
	for (const [position, at] of Object.entries(positions)) {
		const samples = [];
		for (let i = 0; i < SAMPLES; i++) samples.push(await get(`/twins?${query}${at ? `&cursor=${at}` : ""}`));
		const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
		scans[position] = {
			rows_read: Math.max(...samples.map((s) => s.rowsRead)),
			twins_returned: samples[0].body.twins.length,
			p50_ms: +ms[Math.floor(ms.length / 2)].toFixed(2),
			p99_ms: +ms[Math.floor(ms.length * 0.99)].toFixed(2),
		};
	}

	const load = JSON.parse(
		(
			await promisify(execFile)(process.execPath, [
				fileURLToPath(new URL("./load-client.mjs", import.meta.url)),
				JSON.stringify({
					url: server.url,
					seconds: 15,
					concurrency: 8,
					requests: [{ path: `/twins?${query}`, headers }],
				}),
			])
		).stdout,
	);

	const ledger = await benchLedger(server.url, secret);
	const notifications = await benchNotifications(server.url, secret);
	const docs = await benchDocs(server.url, secret);
	const indexes = await benchIndexes(server.url, indexesSeeded);
	const streams = await benchStreams(server.url, secret);
	const writes = await writesPart();
	const timeseries = await timeseriesPart();
	const jobs = await jobsPart();
	// Profiled while the dev server idles: the profiles are wall-clock.
	const startup = await benchStartup();
	const results = {
		twins: TWINS,
		query,
		samples_per_position: SAMPLES,
		scans,
		load: { concurrency: 8, seconds: 15, ...load },
		ledger,
		notifications,
		docs,
		indexes,
		streams,
		writes,
		timeseries,
		jobs,
		startup,
	};
	writeFileSync("bench/results.json", `${JSON.stringify(results, null, 2)}\n`);

	console.log(`\nscan_twins over an account of ${TWINS} twins (GET /twins?${query}, ${SAMPLES} calls each)\n`);
	console.log("| position | rows read per call | twins returned | p50 ms | p99 ms |");
	console.log("|---|---|---|---|---|");
	for (const [position, s] of Object.entries(scans)) {
		console.log(`| ${position} | ${s.rows_read} | ${s.twins_returned} | ${s.p50_ms} | ${s.p99_ms} |`);
	}
	console.log(`\nthroughput from a second process, 8 connections for 15 s: ${load.requests_per_second} requests/s`);
	console.log(
		`(${load.requests} requests, statuses ${JSON.stringify(load.statuses)}, p50 ${load.p50_ms} ms, p99 ${load.p99_ms} ms)`,
	);
	printLedger(ledger);
	printNotifications(notifications);
	printDocs(docs);
	printIndexes(indexes);
	printStreams(streams);
	printWrites(writes);
	printTimeseries(timeseries);
	printJobs(jobs);
	printStartup(startup);
	console.log("\nwritten to bench/results.json");
}

// The timeseries part of `npm run bench` (`-- --only timeseries` runs it alone), on a server of
// its own serving the bench's timeseries entry (timeseries-seed/entry.ts: the product, and a
// route that puts points straight into chunk objects), with two accounts seeded by SQL:
// - ingest: ledger writes (PATCH .../value, a new value each) in closed loops for a few seconds
//   by 1, 8 and 32 writers on one account, each its own twin, on an entry that names one table
//   (rollups 1m and 1h), so that each write answered is one point; beside them the same writes
//   on an entry that names none. Points/s, write latency p50 and p95. Afterwards the table's
//   stats.rows and a consistent count over its chunk objects must both equal the points written;
// - queries: two tables of the same million points (100 twins x 10,000 points, one every 30 s,
//   about 3.5 days, chunk 1D), one with rollups 1m and 1h and one without, created through the
//   API and then seeded by the entry's route. A page of raw points (count=1000), of step=1m and
//   of step=1h, the same pages on both tables: latency p50 and p95 with the tsdb metric of
//   Server-Timing (chunk objects called, stored rows read, its own duration); then the same answer in full, 60
//   buckets of 1m and 24 of 1h, walked to the end in pages of 10,000;
// - storage: per table, what its chunk objects hold (status(): points and the bytes they count;
//   SQLite's own database size), over the points.
import { call } from "./api.mjs";

const SECONDS = 8;
const WRITERS = [1, 8, 32];
const TWINS = 100;
const POINTS_PER_TWIN = 10_000;
const INTERVAL = 30;
// Points per twin in one seed request (20,000 points).
const SEED_STEP = 200;
const SAMPLES = 50;
const COUNT = 1000;
// The most a page takes.
const WALK_COUNT = 10_000;
const PATH = "/account/services/timeseries";

const at = (sorted, share) => +sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * share))].toFixed(2);
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

// One dimension, filled from the ledger's `site`; one float measurement. Chunks of one day.
const definition = (rollups) => ({
	dimensions: { names: ["site"], types: ["text"] },
	measurements: { names: ["celsius"], types: ["float"] },
	defaults: { measurement: "celsius", dimensions: { site: "{LEDGER[site]}" } },
	chunk: "1D",
	rollups: rollups
		? [
				{ step: "1m", retention: "INF" },
				{ step: "1h", retention: "INF" },
			]
		: [],
});

async function createTables(url, secret, tables) {
	const { timeseries } = await call(url, secret, "POST", PATH, { timeseries: tables });
	for (const [name, record] of Object.entries(timeseries))
		if (record.error) throw new Error(`table ${name}: ${record.error}`);
}

// --- ingest

// Closed loops, one per twin, until the deadline, each PATCH a new value of `entry`.
async function hammer(url, secret, twins, entry) {
	const deadline = performance.now() + SECONDS * 1000;
	const latencies = [];
	let failed = 0;
	const loop = async (twin) => {
		for (let i = 1; performance.now() < deadline; i++) {
			const start = performance.now();
			const res = await fetch(`${url}/twins/${twin}/ledgers/personal/value`, {
				method: "PATCH",
				headers: { authorization: secret, "content-type": "application/json" },
				body: JSON.stringify({ entries: { [entry]: { value: 20 + (i % 1000) / 100 } } }),
			});
			await res.arrayBuffer();
			if (res.status === 200) latencies.push(performance.now() - start);
			else failed++;
		}
	};
	const started = performance.now();
	await Promise.all(twins.map(loop));
	const seconds = (performance.now() - started) / 1000;
	latencies.sort((a, b) => a - b);
	return {
		writes: latencies.length,
		failed,
		per_second: +(latencies.length / seconds).toFixed(1),
		p50_ms: at(latencies, 0.5),
		p95_ms: at(latencies, 0.95),
	};
}

// The points of a table the chunk objects hold, after the account's object delivered every
// pending one: the sum of a consistent count over one day buckets.
async function countStored(url, secret, table, ge, le) {
	let total = 0;
	let cursor = null;
	do {
		const query = `ge=${ge}&le=${le}&step=1d&aggregates=count&consistent=true&count=${WALK_COUNT}`;
		const page = await call(url, secret, "GET", `${PATH}/${table}/data?${query}${cursor ? `&cursor=${cursor}` : ""}`);
		for (const row of page.rows) total += row[1] ?? 0;
		cursor = page.cursor;
	} while (cursor);
	return total;
}

async function benchIngest(url, secret) {
	const table = "ingest";
	await createTables(url, secret, { [table]: definition(true) });
	const ge = Date.now() / 1000 - 60;
	const twins = [];
	for (let i = 0; i < Math.max(...WRITERS); i++) {
		const twin = (await call(url, secret, "POST", "/twins", {})).uuid;
		// `celsius` feeds the table (its add is a point), `plain` names none.
		await call(url, secret, "POST", `/twins/${twin}/ledgers/personal`, {
			entries: {
				site: { value: ["north", "south", "east"][i % 3] },
				celsius: { value: 0, timeseries: { [table]: {} } },
				plain: { value: 0 },
			},
		});
		twins.push(twin);
	}
	const runs = [];
	let points = twins.length;
	for (const count of WRITERS) {
		for (const [entry, tables] of [
			["plain", 0],
			["celsius", 1],
		]) {
			const run = await hammer(url, secret, twins.slice(0, count), entry);
			if (tables) points += run.writes;
			runs.push({ writers: count, tables, ...run });
		}
	}
	const record = await call(url, secret, "GET", `${PATH}/${table}`);
	const stored = await countStored(url, secret, table, Math.floor(ge), Math.ceil(Date.now() / 1000 + 60));
	if (record.stats.rows !== points || stored !== points)
		throw new Error(`${points} points written; the table counts ${record.stats.rows}, its chunks hold ${stored}`);
	return { seconds: SECONDS, rollups: ["1m", "1h"], points, runs };
}

// --- queries

// The tsdb metric of an answer: its objects and stored rows read.
function tsdb(res) {
	const match = /tsdb;dur=(\d+);desc="objects=(\d+) rows_read=(\d+)"/.exec(res.headers.get("server-timing") ?? "");
	if (!match) throw new Error(`no tsdb metric in ${res.headers.get("server-timing")}`);
	return { dur: Number(match[1]), objects: Number(match[2]), rowsRead: Number(match[3]) };
}

// One query page, timed; a refusal is answered, not thrown.
async function page(url, secret, path) {
	const start = performance.now();
	const res = await fetch(url + path, { headers: { authorization: secret } });
	const answer = await res.json();
	const ms = performance.now() - start;
	if (res.status !== 200) return { status: res.status, answer, ms };
	return { status: 200, answer, ms, ...tsdb(res) };
}

async function seedTable(url, account, table, twins, start) {
	const began = performance.now();
	let stored = 0;
	for (let from = 0; from < POINTS_PER_TWIN; from += SEED_STEP) {
		const res = await fetch(`${url}/__bench/timeseries/seed`, {
			method: "POST",
			headers: { "content-type": "application/json" },
			body: JSON.stringify({
				account,
				table,
				twins,
				entry: "celsius",
				start,
				interval: INTERVAL,
				from,
				to: Math.min(POINTS_PER_TWIN, from + SEED_STEP),
			}),
		});
		if (res.status !== 200)
			throw new Error(`seed: ${res.status} ${await res.text()} (the timeseries part needs timeseries-seed/entry.ts)`);
		stored += (await res.json()).stored;
	}
	return { points: stored, ms: Math.round(performance.now() - began) };
}

async function storage(url, account, table) {
	const res = await fetch(`${url}/__bench/timeseries/size?account=${account}&table=${table}`);
	if (res.status !== 200) throw new Error(`size: ${res.status} ${await res.text()}`);
	const { chunks, stats } = await res.json();
	const sum = (f) => chunks.reduce((total, chunk) => total + f(chunk), 0);
	const points = sum((c) => c.rows);
	const databaseSize = sum((c) => c.database_size);
	const counted = sum((c) => c.bytes);
	const tierRows = {};
	for (const chunk of chunks)
		for (const [name, n] of Object.entries(chunk.tables))
			if (name.startsWith("r_")) tierRows[name.slice(2)] = (tierRows[name.slice(2)] ?? 0) + n;
	return {
		chunks: chunks.length,
		points,
		table_rows: stats.rows,
		table_size: stats.table_size,
		tier_rows: tierRows,
		counted_bytes: counted,
		database_bytes: databaseSize,
		counted_bytes_per_point: +(counted / points).toFixed(1),
		database_bytes_per_point: +(databaseSize / points).toFixed(1),
	};
}

// SAMPLES calls of one query page: latency and the tsdb metric (median and max).
async function samplePage(url, secret, table, query) {
	const path = `${PATH}/${table}/data?${query}`;
	const first = await page(url, secret, path);
	if (first.status !== 200) return { status: first.status, subcode: first.answer.subcode, code: first.answer.code };
	const samples = [];
	for (let k = 0; k < SAMPLES; k++) {
		const s = await page(url, secret, path);
		if (s.status !== 200) throw new Error(`${path}: ${s.status} ${JSON.stringify(s.answer)}`);
		samples.push(s);
	}
	const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
	return {
		status: 200,
		resolution: first.answer.resolution,
		rows_answered: first.answer.rows.length,
		objects: median(samples.map((s) => s.objects)),
		rows_read: median(samples.map((s) => s.rowsRead)),
		max_rows_read: Math.max(...samples.map((s) => s.rowsRead)),
		tsdb_ms: median(samples.map((s) => s.dur)),
		p50_ms: at(ms, 0.5),
		p95_ms: at(ms, 0.95),
	};
}

// The whole answer of a query, page after page: SAMPLES times, the total per walk.
async function sampleWalk(url, secret, table, query) {
	const walks = [];
	for (let k = 0; k < SAMPLES; k++) {
		let cursor = null;
		const walk = { ms: 0, pages: 0, rows: 0, objects: 0, rowsRead: 0, dur: 0 };
		do {
			const s = await page(url, secret, `${PATH}/${table}/data?${query}${cursor ? `&cursor=${cursor}` : ""}`);
			if (s.status !== 200) return { status: s.status, subcode: s.answer.subcode, code: s.answer.code };
			walk.ms += s.ms;
			walk.pages++;
			walk.rows += s.answer.rows.length;
			walk.objects += s.objects;
			walk.rowsRead += s.rowsRead;
			walk.dur += s.dur;
			cursor = s.answer.cursor;
		} while (cursor);
		walks.push(walk);
	}
	const ms = walks.map((w) => w.ms).sort((a, b) => a - b);
	return {
		status: 200,
		pages: median(walks.map((w) => w.pages)),
		rows_answered: median(walks.map((w) => w.rows)),
		objects: median(walks.map((w) => w.objects)),
		rows_read: median(walks.map((w) => w.rowsRead)),
		tsdb_ms: median(walks.map((w) => w.dur)),
		p50_ms: at(ms, 0.5),
		p95_ms: at(ms, 0.95),
	};
}

async function benchQueries(url, { uuid: account, secret }) {
	const tables = { rolled: definition(true), plain: definition(false) };
	await createTables(url, secret, tables);
	const twins = [];
	for (let i = 0; i < TWINS; i++) twins.push((await call(url, secret, "POST", "/twins", {})).uuid);
	// Whole days back from today, so that the points end some hours before now.
	const start = Math.floor(Date.now() / 86_400_000) * 86_400 - 4 * 86_400;
	const end = start + POINTS_PER_TWIN * INTERVAL;
	const seeding = {};
	for (const table of Object.keys(tables)) {
		seeding[table] = await seedTable(url, account, table, twins, start);
		const record = await call(url, secret, "GET", `${PATH}/${table}`);
		if (seeding[table].points !== TWINS * POINTS_PER_TWIN || record.stats.rows !== TWINS * POINTS_PER_TWIN)
			throw new Error(`${table}: ${seeding[table].points} points stored, the table counts ${record.stats.rows}`);
	}
	const range = `ge=${start}&le=${end}`;
	const pages = {
		raw: `${range}&count=${COUNT}`,
		"step=1m": `${range}&step=1m&count=${COUNT}`,
		"step=1h": `${range}&step=1h&count=${COUNT}`,
	};
	// A day in the middle of the points, and its middle hour: whole answers of 60 and 24 buckets.
	const day = start + 86_400;
	const hour = day + 12 * 3600;
	const walks = {
		"step=1m over one hour": `ge=${hour}&le=${hour + 3599}&step=1m&count=${WALK_COUNT}`,
		"step=1h over one day": `ge=${day}&le=${day + 86_399}&step=1h&count=${WALK_COUNT}`,
	};
	const results = { pages: {}, walks: {} };
	for (const [kind, query] of Object.entries(pages))
		for (const table of Object.keys(tables))
			results.pages[`${kind}|${table}`] = { query: kind, table, ...(await samplePage(url, secret, table, query)) };
	for (const [kind, query] of Object.entries(walks))
		for (const table of Object.keys(tables))
			results.walks[`${kind}|${table}`] = { query: kind, table, ...(await sampleWalk(url, secret, table, query)) };
	const stored = {};
	for (const table of Object.keys(tables)) stored[table] = await storage(url, account, table);
	return {
		twins: TWINS,
		points_per_twin: POINTS_PER_TWIN,
		interval_s: INTERVAL,
		range: { ge: start, le: end },
		count: COUNT,
		walk_count: WALK_COUNT,
		samples: SAMPLES,
		seeding,
		pages: Object.values(results.pages),
		walks: Object.values(results.walks),
		storage: stored,
	};
}

export async function benchTimeseries(url, accounts) {
	const [ingest, queried] = accounts;
	return { ingest: await benchIngest(url, ingest.secret), ...(await benchQueries(url, queried)) };
}

export function printTimeseries(result) {
	const { ingest } = result;
	console.log(
		`\ntimeseries ingest: ledger writes (PATCH .../value, a new value each) in closed loops for ${ingest.seconds} s, each writer its own twin, one account; with one table (rollups ${ingest.rollups.join(", ")}) each write is one point\n`,
	);
	console.log("| writers | tables named | writes | points/s (writes/s) | p50 ms | p95 ms | failed |");
	console.log("|---|---|---|---|---|---|---|");
	for (const r of ingest.runs)
		console.log(
			`| ${r.writers} | ${r.tables} | ${r.writes} | ${r.per_second} | ${r.p50_ms} | ${r.p95_ms} | ${r.failed} |`,
		);
	console.log(`points written and found in the chunk objects (consistent count): ${ingest.points}`);
	const points = result.twins * result.points_per_twin;
	console.log(
		`\ntimeseries queries over ${points} points (${result.twins} twins x ${result.points_per_twin}, one every ${result.interval_s} s), seeded into the chunk objects in ${Object.entries(
			result.seeding,
		)
			.map(([t, s]) => `${(s.ms / 1000).toFixed(1)} s (${t})`)
			.join(", ")}; rolled: rollups 1m and 1h, plain: none`,
	);
	console.log(`first page of the whole range, count=${result.count}, ${result.samples} calls each\n`);
	console.log("| query | table | resolution | rows answered | objects | rows read (max) | tsdb ms | p50 ms | p95 ms |");
	console.log("|---|---|---|---|---|---|---|---|---|");
	for (const q of result.pages)
		console.log(
			q.status === 200
				? `| ${q.query} | ${q.table} | ${q.resolution} | ${q.rows_answered} | ${q.objects} | ${q.rows_read} (${q.max_rows_read}) | ${q.tsdb_ms} | ${q.p50_ms} | ${q.p95_ms} |`
				: `| ${q.query} | ${q.table} | refused: ${q.subcode} ${q.code} | | | | | | |`,
		);
	console.log(`\nthe whole answer, pages of ${result.walk_count} walked to the end, ${result.samples} walks each\n`);
	console.log("| query | table | pages | rows answered | objects | rows read | tsdb ms | p50 ms | p95 ms |");
	console.log("|---|---|---|---|---|---|---|---|---|");
	for (const w of result.walks)
		console.log(
			w.status === 200
				? `| ${w.query} | ${w.table} | ${w.pages} | ${w.rows_answered} | ${w.objects} | ${w.rows_read} | ${w.tsdb_ms} | ${w.p50_ms} | ${w.p95_ms} |`
				: `| ${w.query} | ${w.table} | refused: ${w.subcode} ${w.code} | | | | | | |`,
		);
	console.log("\ntimeseries storage: the chunk objects of each table\n");
	console.log(
		"| table | chunks | points | rollup rows | bytes counted (status) | per point | SQLite database bytes | per point |",
	);
	console.log("|---|---|---|---|---|---|---|---|");
	for (const [table, s] of Object.entries(result.storage))
		console.log(
			`| ${table} | ${s.chunks} | ${s.points} | ${
				Object.entries(s.tier_rows)
					.map(([tier, n]) => `${tier}: ${n}`)
					.join(", ") || "none"
			} | ${s.counted_bytes} | ${s.counted_bytes_per_point} | ${s.database_bytes} | ${s.database_bytes_per_point} |`,
		);
}

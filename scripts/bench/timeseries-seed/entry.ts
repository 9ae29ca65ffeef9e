// The Worker the timeseries benchmark runs in place of src/index.ts: the product unchanged, with
// two routes of its own that only the benchmark serves. A million points through ledger writes
// would take most of an hour, so the benchmark creates its tables through the API and then has
// this entry put the points straight into their chunk objects, as the account's object would
// deliver them: the same chunk names and ChunkSpec (src/timeseries/spec.ts), the same insert,
// and in D1 the chunks listed in timeseries_chunks and the points added to the table's
// stats.rows and table_size, as a ledger write's batch adds them. None of this is in the product.
//
// POST /__bench/timeseries/seed with {account, table, twins, entry, start, interval, from, to}:
// points k = from .. to - 1 of every twin j, at start + k * interval + j * interval / twins (the
// twins spread over each interval), one write each (seq k * twins + j + 1), dimension `site` one
// of three by twin, a float value. Answers {stored, duplicates, chunks}.
// GET /__bench/timeseries/size?account=..&table=.. answers, per chunk of the table's generation,
// what its object tracks (status(): raw rows and the bytes it counts), its rows per tier and its
// SQLite database's size (ctx.storage.sql.databaseSize).
import * as product from "../../../src/index";
import { utf8Bytes } from "../../../src/base/json";
import { database } from "../../../src/db/client";
import { homeDatabase } from "../../../src/db/shards";
import { chunksBetween, countPoints, findTimeseriesTable, noteChunks } from "../../../src/db/timeseries";
import type { WebhookJob } from "../../../src/notifications/jobs";
import { chunkName, chunkObject } from "../../../src/timeseries/chunk-client";
import type { ChunkObject } from "../../../src/timeseries/chunk-object";
import { chunkSpec, chunkStart } from "../../../src/timeseries/spec";
import type { Point } from "../../../src/timeseries/types";

export { AccountDO, DeliveryDO, MoveDO, StreamDO } from "../../../src/index";

const ROUTE = "/__bench/timeseries/";
// Points per insert call: about what the account's drain hands one chunk object at most (500
// outbox rows a round) times ten; the object stores them in one transaction either way.
const BATCH = 5000;
const SITES = ["north", "south", "east"];

// The chunk object with what the benchmark reads of its storage.
export class TimeseriesDO extends product.TimeseriesDO {
	async benchStorage() {
		const sql = this.ctx.storage.sql;
		const tables = sql
			.exec<{ name: string }>(
				"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '\\_%' ESCAPE '\\'",
			)
			.toArray()
			.map(({ name }) => name);
		const rows: Record<string, number> = {};
		for (const name of tables) rows[name] = sql.exec<{ n: number }>(`SELECT count(*) AS n FROM "${name}"`).one().n;
		return { database_size: sql.databaseSize, tables: rows };
	}
}

type BenchChunk = Pick<ChunkObject, "status"> & {
	benchStorage(): Promise<{ database_size: number; tables: Record<string, number> }>;
};

type SeedInput = {
	account: string;
	table: string;
	twins: string[];
	entry: string;
	start: number;
	interval: number;
	from: number;
	to: number;
};

// What a point adds to the table's table_size, counted as the account's object counts it
// (src/account/timeseries-feed.ts): its key, twin, dimensions and value as stored.
const pointBytes = (point: Point) =>
	24 +
	utf8Bytes(point.entry) +
	utf8Bytes(point.twin) +
	utf8Bytes(point.measurement) +
	utf8Bytes(JSON.stringify(point.dims)) +
	utf8Bytes(JSON.stringify(point.value));

async function tableOf(env: Env, account: string, name: string) {
	const db = database(homeDatabase(env, account));
	const table = await findTimeseriesTable(db, account, name);
	if (!table) throw new Error(`no table ${name} on account ${account}`);
	return { db, table };
}

async function seed(env: Env, input: SeedInput) {
	const { db, table } = await tableOf(env, input.account, input.table);
	const measurement = table.measurements.names[0]!;
	const byChunk = new Map<number, Point[]>();
	const n = input.twins.length;
	for (let k = input.from; k < input.to; k++) {
		for (let j = 0; j < n; j++) {
			const ts = +(input.start + k * input.interval + (j * input.interval) / n).toFixed(3);
			// A daily swing per twin, and a small wobble from point to point.
			const value = +(20 + 5 * Math.sin((2 * Math.PI * ts) / 86_400 + j) + ((k * 7 + j * 13) % 10) / 10).toFixed(2);
			const point: Point = {
				seq: k * n + j + 1,
				entry: input.entry,
				ts,
				twin: input.twins[j]!,
				dims: [SITES[j % SITES.length]!],
				measurement,
				value,
			};
			const start = chunkStart(table, ts);
			const points = byChunk.get(start) ?? [];
			points.push(point);
			byChunk.set(start, points);
		}
	}
	const maxBytes = Number(env.MAX_TIMESERIES_CHUNK_BYTES);
	let stored = 0;
	let duplicates = 0;
	let bytes = 0;
	for (const [start, points] of byChunk) {
		points.sort((a, b) => a.ts - b.ts || a.seq - b.seq);
		const object = chunkObject(env, table.uuid, table.generation, start);
		const spec = chunkSpec(table, start, maxBytes);
		for (let i = 0; i < points.length; i += BATCH) {
			const batch = points.slice(i, i + BATCH);
			const result = await object.insert(spec, batch);
			if (result.full.length || result.expired)
				throw new Error(`chunk ${start}: ${result.full.length} refused as full, ${result.expired} expired`);
			stored += result.stored;
			duplicates += result.duplicates;
			// Points stored before (a seed run again) are not counted twice.
			if (result.duplicates === 0) bytes += batch.reduce((sum, point) => sum + pointBytes(point), 0);
			else if (result.stored) throw new Error("a batch partly stored before: run the seed on a fresh table");
		}
	}
	// As the write's batch does: the chunks listed, the points counted.
	const starts = [...byChunk.keys()];
	await db.batch([
		countPoints(db, table.uuid, table.generation, stored, bytes),
		noteChunks(
			db,
			table.account,
			starts.map((start) => ({ table: table.uuid, generation: table.generation, start })),
		),
	]);
	return { stored, duplicates, chunks: starts };
}

async function size(env: Env, account: string, name: string) {
	const { db, table } = await tableOf(env, account, name);
	const chunks = await chunksBetween(
		db,
		{ table: table.uuid, generation: table.generation },
		-Number.MAX_SAFE_INTEGER,
		Number.MAX_SAFE_INTEGER,
		false,
		10_000,
	);
	const answer = [];
	for (const { start } of chunks) {
		const object = env.TIMESERIES.getByName(chunkName(table.uuid, table.generation, start)) as unknown as BenchChunk;
		const status = await object.status();
		answer.push({ start, ...status, ...(await object.benchStorage()) });
	}
	return {
		table: table.uuid,
		generation: table.generation,
		stats: { rows: table.rows, table_size: table.table_size },
		chunks: answer,
	};
}

async function benchRoute(request: Request, env: Env): Promise<Response> {
	const url = new URL(request.url);
	const what = url.pathname.slice(ROUTE.length);
	try {
		if (what === "seed" && request.method === "POST")
			return Response.json(await seed(env, (await request.json()) as SeedInput));
		if (what === "size" && request.method === "GET")
			return Response.json(await size(env, url.searchParams.get("account") ?? "", url.searchParams.get("table") ?? ""));
	} catch (error) {
		return new Response(`${String(error)}\n`, { status: 500 });
	}
	return new Response(null, { status: 404 });
}

export default {
	fetch(request, env, ctx) {
		if (new URL(request.url).pathname.startsWith(ROUTE)) return benchRoute(request, env);
		return product.default.fetch(request, env, ctx);
	},
	queue(batch, env) {
		return product.default.queue(batch, env);
	},
} satisfies ExportedHandler<Env, WebhookJob>;

// A reader of export files on 127.0.0.1 for the tests, started once by vitest's globalSetup: the
// tests run inside workerd, where DuckDB (a native Node module) cannot, so they send it a file's
// bytes and it answers what DuckDB reads from them. Its port reaches the tests through
// `inject("duckdbPort")`.
//
// POST /rows with a file's bytes (gzip NDJSON) answers `{columns, types, rows}`: the columns and
// their types as DuckDB's read_json_auto detects them, and the rows as JSON values. For the rows
// every column is read as JSON text (maximum_depth=1), which is then parsed: each value comes back
// exactly as the line held it, not reshaped into DuckDB's structs.
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { DuckDBConnection } from "@duckdb/node-api";
import type { TestProject } from "vitest/node";

async function openDuckDB() {
	// Loaded on the first file only: most test runs read none.
	const { DuckDBInstance } = await import("@duckdb/node-api");
	return DuckDBInstance.create(":memory:");
}

export default async function setup(project: TestProject) {
	const dir = await mkdtemp(join(tmpdir(), "export-files-"));
	let connection: Promise<DuckDBConnection> | undefined;

	async function read(bytes: Buffer) {
		connection ??= openDuckDB().then((instance) => instance.connect());
		const db = await connection;
		const file = join(dir, `${randomUUID()}.ndjson.gz`);
		await writeFile(file, bytes);
		try {
			const source = `'${file}', format = 'newline_delimited', compression = 'gzip'`;
			const typed = await db.runAndReadAll(`SELECT * FROM read_json_auto(${source})`);
			const raw = await db.runAndReadAll(`SELECT * FROM read_json_auto(${source}, maximum_depth = 1)`);
			const rows = raw
				.getRowObjectsJson()
				.map((row) =>
					Object.fromEntries(
						Object.entries(row).map(([key, value]) => [key, value === null ? null : JSON.parse(String(value))]),
					),
				);
			return {
				columns: typed.columnNames(),
				types: typed.columnTypes().map((type) => type.toString()),
				rows,
			};
		} finally {
			await rm(file, { force: true });
		}
	}

	const server = createServer(async (req: IncomingMessage, res: ServerResponse) => {
		const chunks: Buffer[] = [];
		for await (const chunk of req) chunks.push(chunk as Buffer);
		if (req.method !== "POST" || req.url !== "/rows") return res.writeHead(404).end();
		try {
			const answer = await read(Buffer.concat(chunks));
			res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
		} catch (error) {
			res.writeHead(422, { "content-type": "application/json" }).end(JSON.stringify({ error: String(error) }));
		}
	});
	await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
	project.provide("duckdbPort", (server.address() as AddressInfo).port);

	return async () => {
		server.closeAllConnections();
		await new Promise((resolve) => server.close(resolve));
		await rm(dir, { recursive: true, force: true });
	};
}

import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

// The typed client as a user gets it: `npm pack` in client/ (which builds it), the tarball
// installed with plain npm into a project of its own, imported from plain JavaScript under the
// repository's Node 22 and the machine's Node (20 where it is), and type-checked as a dependency
// under moduleResolution nodenext and bundler.
const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const NODE_22 = join(ROOT, "node_modules/node/bin/node");

// The machine's node: the first on PATH outside a node_modules/.bin (npm puts the repository's
// first). Each distinct binary runs the consumer.
function nodes(): string[] {
	const found = (process.env.PATH ?? "")
		.split(delimiter)
		.filter((dir) => dir && !dir.includes("node_modules"))
		.map((dir) => join(dir, "node"))
		.find((file) => existsSync(file));
	return [...new Set([NODE_22, ...(found ? [found] : [])].map((file) => realpathSync(file)))];
}

const CONSUMER_MJS = `
import { createClient, SUBCODES, TwinRegistryError } from "twin-registry-client";
const registry = createClient({ baseUrl: process.argv[2], credential: "secret", retry: { baseDelayMs: 1 } });
const result = { node: process.versions.node, subcode: SUBCODES.idempotency_in_flight };
result.twin = (await registry.post("/twins", { body: { description: { site: "north" } } })).uuid;
result.refused = await registry.get("/twins/{twin}", { params: { path: { twin: "gone" } } }).catch((e) => e instanceof TwinRegistryError && [e.status, e.subcode, e.code]);
result.doc = (await registry.uploadDoc({ twin: result.twin, name: "notes.txt", body: "hello world", contentType: "text/plain" })).creation_certificate;
const stream = registry.stream({ topics: ["alerts"], reconnect: { delayMs: 0 } });
result.events = [];
for await (const event of stream) {
	result.events.push([event.id, event.event]);
	if (result.events.length === 2) stream.close();
}
result.websocket = typeof WebSocket === "function"
	? "global"
	: await registry.stream({ topics: ["alerts"], transport: "websocket" })[Symbol.asyncIterator]().next().catch((e) => e.message);
console.log(JSON.stringify(result));
`;

const CONSUMER_TS = `
import { createClient, SUBCODES, TwinRegistryError, type StreamEvent, type Twin } from "twin-registry-client";

const registry = createClient({ baseUrl: "https://registry.example.com", credential: "secret" });

export async function use(): Promise<string> {
	const twin: Twin = await registry.post("/twins", { body: { description: { site: "north" } } });
	// @ts-expect-error a description is an object, not a string
	await registry.post("/twins", { body: { description: "north" } });
	// @ts-expect-error no such route
	await registry.get("/no-such-route");
	// @ts-expect-error a uuid is a string
	const wrong: number = twin.uuid;
	const subcode: 409107 = SUBCODES.idempotency_in_flight;
	for await (const event of registry.stream({ topics: ["alerts"] })) {
		const id: string = event.id;
		console.log(id, event satisfies StreamEvent, wrong, subcode);
	}
	try {
		await registry.uploadDoc({ twin: twin.uuid, name: "a.txt", body: "a" });
	} catch (error) {
		if (error instanceof TwinRegistryError && error.is("twin_doc_limit")) return error.code ?? "";
	}
	return twin.uuid;
}
`;

// The fake service: just enough of the routes the consumer calls, each run's under its own
// first path segment.
function fakeService(): Server {
	const runs = new Map<string, { twinAttempts: number; streams: number; uploaded: Map<string, string> }>();
	return createServer((request, response) => {
		const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
			response.writeHead(status, { "content-type": "application/json", ...headers });
			response.end(JSON.stringify(body));
		};
		const chunks: Buffer[] = [];
		request.on("data", (chunk: Buffer) => chunks.push(chunk));
		request.on("end", () => {
			const [, prefix, ...rest] = (request.url ?? "/").split("/");
			const origin = `http://${request.headers.host}/${prefix}`;
			const url = new URL(`/${rest.join("/")}`, origin);
			const state = runs.get(prefix) ?? { twinAttempts: 0, streams: 0, uploaded: new Map<string, string>() };
			runs.set(prefix, state);
			const { uploaded } = state;
			const body = Buffer.concat(chunks);
			if (request.headers.authorization !== "secret" && !url.pathname.startsWith("/upload/"))
				return send(401, { subcode: 401101, trace: "t", description: "No credential was given" });
			const route = `${request.method} ${url.pathname}`;
			if (route === "POST /twins") {
				// The first attempt fails; the retry must bear the same key.
				if (state.twinAttempts++ === 0)
					return send(503, { subcode: 500101, trace: "t", description: "Internal error" }, { "retry-after": "0" });
				return send(201, { uuid: `twin-${request.headers["idempotency-key"]}` });
			}
			if (route === "GET /twins/gone")
				return send(404, { subcode: 404102, trace: "t", description: "No such resource", code: "not_found" });
			if (route === "POST /cache")
				return send(201, { handler: "h1", url: `${origin}/upload/h1?token=x`, validity_ts: 1 });
			if (route === "PUT /upload/h1") {
				if (
					request.headers["content-length"] !== String(body.length) ||
					request.headers["content-type"] !== "text/plain"
				)
					return send(411, { subcode: 411171, trace: "t", description: "length" });
				const hash = createHash("sha256").update(body).digest("hex");
				uploaded.set("h1", hash);
				return send(200, { handler: "h1", size: body.length, hash });
			}
			if (route.startsWith("POST /twins/") && url.pathname.endsWith("/docs")) {
				const { docs } = JSON.parse(body.toString()) as { docs: Record<string, { handler: string; hash: string }> };
				const [[name, doc]] = Object.entries(docs);
				if (uploaded.get(doc.handler) !== doc.hash)
					return send(400, { subcode: 400171, trace: "t", description: "hash" });
				return send(201, {
					docs: {
						[name]: { creation_certificate: { size: 11, hash: doc.hash, created_ts: 1, creator: "a" }, status: "ok" },
					},
				});
			}
			if (route === "GET /notifications/stream") {
				response.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
				// The first stream sends one message and drops; the second must resume after it.
				if (state.streams++ === 0)
					return response.end('retry: 2000\n\nid: 1\nevent: ledger.entry.added\ndata: {"type":"Notification"}\n\n');
				const resumed = request.headers["last-event-id"] === "1" ? "2" : "wrong";
				response.write(`: hb\n\nid: ${resumed}\nevent: ledger.entry.updated\ndata: {"type":"Notification"}\n\n`);
				return;
			}
			send(404, { subcode: 404101, trace: "t", description: "No such route" });
		});
	});
}

function typeErrors(dir: string, resolution: "nodenext" | "bundler"): string[] {
	const options: ts.CompilerOptions = {
		strict: true,
		noEmit: true,
		target: ts.ScriptTarget.ES2022,
		lib: ["lib.es2022.d.ts", "lib.dom.d.ts", "lib.dom.asynciterable.d.ts"],
		types: [],
		skipLibCheck: false,
		// The lib files are TypeScript's own; the package's declarations and its dependency's are checked.
		skipDefaultLibCheck: true,
		...(resolution === "nodenext"
			? { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext }
			: { module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler }),
	};
	const program = ts.createProgram([join(dir, "consumer.ts")], options);
	return ts
		.getPreEmitDiagnostics(program)
		.map((d) => `${d.file?.fileName ?? ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
}

describe("the client package", () => {
	let dir: string;
	let server: Server;
	let baseUrl: string;

	beforeAll(async () => {
		dir = mkdtempSync(join(tmpdir(), "twin-registry-client-"));
		const { stdout } = await run("npm", ["pack", "--pack-destination", dir, "--silent"], { cwd: join(ROOT, "client") });
		const tarball = join(dir, stdout.trim().split("\n").pop() ?? "");
		const project = join(dir, "consumer");
		mkdirSync(project);
		writeFileSync(join(project, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
		await run("npm", ["install", tarball, "--no-audit", "--no-fund", "--prefer-offline", "--silent"], { cwd: project });
		writeFileSync(join(project, "consumer.mjs"), CONSUMER_MJS);
		writeFileSync(join(project, "consumer.ts"), CONSUMER_TS);
		server = fakeService();
		await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
		const address = server.address();
		baseUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
	}, 120_000);

	afterAll(() => {
		server?.close();
		if (dir) rmSync(dir, { recursive: true, force: true });
	});

	it("holds compiled JavaScript, declarations and the generated types, and names its dependency", () => {
		const manifest = JSON.parse(
			readFileSync(join(dir, "consumer/node_modules/twin-registry-client/package.json"), "utf8"),
		) as Record<string, unknown>;
		expect(manifest.dependencies).toHaveProperty("openapi-fetch");
		for (const file of ["index.js", "index.d.ts", "schema.d.ts", "stream.js", "codes.js"])
			expect(existsSync(join(dir, "consumer/node_modules/twin-registry-client/dist", file)), file).toBe(true);
		expect(existsSync(join(dir, "consumer/node_modules/twin-registry-client/src"))).toBe(false);
		expect(existsSync(join(dir, "consumer/node_modules/openapi-fetch"))).toBe(true);
	});

	it.each(["nodenext", "bundler"] as const)(
		"is typed under moduleResolution %s: a right call compiles, a wrong body does not",
		(resolution) => {
			expect(typeErrors(join(dir, "consumer"), resolution)).toEqual([]);
		},
		30_000,
	);

	it("runs from plain JavaScript under each Node", async () => {
		const runs = nodes();
		expect(runs.length).toBeGreaterThan(0);
		for (const node of runs) {
			// Each run has a service of its own, under a path of its own.
			const { stdout } = await run(node, ["consumer.mjs", `${baseUrl}/${node.replace(/\W/g, "")}`], {
				cwd: join(dir, "consumer"),
				timeout: 15_000,
			});
			const result = JSON.parse(stdout) as Record<string, unknown>;
			const major = Number(String(result.node).split(".")[0]);
			expect(result, `under Node ${result.node}`).toMatchObject({
				subcode: 409107,
				refused: [404, 404102, "not_found"],
				doc: { size: 11, hash: "b94d27b9934d3e08a52e52d7da7dabfac484efe37a5380ee9088f7ace2efcde9" },
				events: [
					["1", "ledger.entry.added"],
					["2", "ledger.entry.updated"],
				],
			});
			expect(result.twin).toMatch(/^twin-[0-9a-f-]{36}$/);
			expect(result.websocket, `under Node ${result.node}`).toEqual(
				major >= 22 ? "global" : expect.stringContaining("Node 20 has no global WebSocket"),
			);
		}
	}, 30_000);
});

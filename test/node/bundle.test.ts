import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { buildWorker, compiledAtStartup } from "../../scripts/build/worker.mjs";
import { describe, expect, it } from "vitest";

const SRC = fileURLToPath(new URL("../../src", import.meta.url));

function sources(dir: string): string[] {
	return readdirSync(dir).flatMap((name) => {
		const path = join(dir, name);
		return statSync(path).isDirectory() ? sources(path) : path.endsWith(".ts") ? [path] : [];
	});
}

// The Worker validates with zod's lighter entry point, zod/mini (functions in place of the
// classic API's methods, so the bundler keeps only the checks in use: the classic entry
// added about 17 KiB gzipped). Its `z` export is a namespace object the bundler cannot shake:
// one value import of it would put every locale into the Worker. `import * as z` lets it keep
// only what is used.
describe("the Worker's imports", () => {
	const zodImports = sources(SRC).flatMap((file) =>
		[...readFileSync(file, "utf8").matchAll(/^import\s+(type\s+)?(.*?)\s+from\s*["'](zod(?:\/[^"']*)?)["']/gm)].map(
			([, type, what, from]) => ({ file, type: !!type, what, from }),
		),
	);

	it("take zod/mini, never the classic entry", () => {
		expect(zodImports.filter((i) => i.from === "zod/mini").length).toBeGreaterThan(10);
		expect(zodImports.filter((i) => i.from !== "zod/mini" && i.from !== "zod/locales")).toEqual([]);
	});

	it("take zod/mini as a namespace, never its z binding", () => {
		expect(zodImports.filter((i) => i.from === "zod/mini" && !i.type && i.what !== "* as z")).toEqual([]);
	});
});

// What a new isolate evaluates before its first request: the deploy build's entry and every
// chunk it imports statically (scripts/build/worker.mjs splits the Worker where it imports
// dynamically). Operations and zod come later, with the first request that needs them
// (src/routes.ts, src/http/pipeline.ts); the objects' implementations and the queue consumer
// with their first call (src/objects.ts).
async function loadedAtStartup(): Promise<string[]> {
	const metafile = await buildWorker({ write: false });
	return compiledAtStartup(metafile).flatMap((name) => Object.keys(metafile.outputs[name]!.inputs));
}

describe("a new isolate's startup", async () => {
	const inputs = await loadedAtStartup();

	it("loads no operation's module and no zod", () => {
		expect(inputs.filter((input) => input.includes("node_modules/zod/"))).toEqual([]);
		expect(inputs.filter((input) => /src\/operations\/(?!operation\.ts$)/.test(input))).toEqual([]);
	});

	it("loads no Durable Object's implementation, no queue consumer and no regular-expression engine", () => {
		const implementations = [
			"src/account/object.ts",
			"src/notifications/delivery-object.ts",
			"src/notifications/streams/object.ts",
			"src/notifications/queue-consumer.ts",
		];
		expect(inputs.filter((input) => implementations.some((module) => input.endsWith(module)))).toEqual([]);
		expect(inputs.filter((input) => input.includes("node_modules/re2js/"))).toEqual([]);
	});

	// Authentication is one fixed SQL text on the D1 session; drizzle and the tables come with
	// the first operation that queries through them (src/db/client.ts).
	it("loads no drizzle-orm and no table definition", () => {
		expect(
			inputs.filter((input) => input.includes("node_modules/drizzle-orm/") || input.endsWith("src/db/schema.ts")),
		).toEqual([]);
	});

	// The rate limits' client key (src/http/rate-limit.ts) is needed only by a failed
	// authentication or a route whose credential is in its URL.
	it("loads no address parser", () => {
		expect(inputs.filter((input) => input.includes("node_modules/ipaddr.js/"))).toEqual([]);
	});

	it("still loads what every request needs, and the classes the Worker exports", () => {
		for (const module of [
			"src/index.ts",
			"src/http/pipeline.ts",
			"src/routes.ts",
			"src/objects.ts",
			"src/http/auth.ts",
		]) {
			expect(inputs.some((input) => input.endsWith(module))).toBe(true);
		}
	});
});

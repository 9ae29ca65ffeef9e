// Builds the Worker for wrangler, which runs it first whenever it needs the script (wrangler.toml's
// [build]: `npm start`, `npm run deploy`, `npm run build`, `wrangler check startup`): one module
// per chunk, split wherever the code imports dynamically (each operation's module, validation,
// the Durable Objects' implementations, the queue consumer). A new isolate compiles and runs only
// the entry and what it imports statically; the rest is compiled when first imported. wrangler's
// own bundler makes one script, which the runtime compiles whole before the first request.
// Options as wrangler's bundler sets them; minified, with source maps for readable stacks.
import { existsSync, readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const OUT = join(ROOT, "build/worker");
const ENTRY = "src/index.ts";

// `write: false` builds in memory, for a test that reads what the build would be.
export async function buildWorker({ write = true } = {}) {
	const result = await esbuild.build({
		write,
		absWorkingDir: ROOT,
		entryPoints: { index: ENTRY },
		outdir: OUT,
		chunkNames: "chunks/[name]-[hash]",
		bundle: true,
		splitting: true,
		format: "esm",
		target: "es2024",
		supported: { using: true },
		conditions: ["workerd", "worker", "browser"],
		external: ["cloudflare:*"],
		define: { "process.env.NODE_ENV": '"production"', "globalThis.process.env.NODE_ENV": '"production"' },
		minify: true,
		keepNames: false,
		sourcemap: true,
		metafile: true,
		logLevel: "warning",
	});
	if (write && !existsSync(join(OUT, "index.js"))) throw new Error("the build wrote no build/worker/index.js");
	// Chunk names carry a hash: old ones would be uploaded with the new (wrangler.toml's rules take
	// every file under chunks/), so those this build did not write go. Only after it: the entry is
	// never missing, also while a running `npm start` reloads (a changed wrangler.toml, a moved
	// bucket's flip) and checks for it as the build runs.
	if (write) {
		const written = new Set(Object.keys(result.metafile.outputs).map((name) => join(ROOT, name)));
		const chunks = join(OUT, "chunks");
		for (const name of existsSync(chunks) ? readdirSync(chunks) : [])
			if (!written.has(join(chunks, name))) rmSync(join(chunks, name), { force: true });
	}
	return result.metafile;
}

// The build's modules a new isolate compiles at startup, by the build's metafile: the entry and
// the chunks it imports statically. The rest waits for a dynamic import.
export function compiledAtStartup({ outputs }) {
	const eager = new Set();
	const visit = (name) => {
		if (eager.has(name)) return;
		eager.add(name);
		for (const imported of outputs[name].imports)
			if (imported.kind === "import-statement" && !imported.external) visit(imported.path);
	};
	// Every dynamically imported module is an entry point of the metafile too: the Worker's is src/index.ts.
	visit(Object.keys(outputs).find((name) => outputs[name].entryPoint === ENTRY));
	return [...eager];
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await buildWorker();

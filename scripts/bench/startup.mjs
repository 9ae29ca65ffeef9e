// The startup part of `npm run bench` (`-- --only startup` runs it alone): what a new isolate
// pays before its first request, for the deploy build (scripts/build/worker.mjs, as `wrangler
// deploy` runs it) and for a bare Worker that answers `{}`, measured the same way.
//
// - `wrangler check startup` profiles the script's startup in the local runtime and reports its
//   active time. The figure is wall-clock time between profiler samples, so it moves with
//   whatever else the machine runs: each side is profiled `runs` times and the median kept.
// - The same build's entry (and the chunks it imports statically) compiled and evaluated in a
//   fresh Node process (V8, as the runtime), CPU time by process.cpuUsage, median of `nodeRuns`:
//   a steadier figure of the same work, for telling two builds apart.
// - The size of all the Worker's modules, as wrangler reports it.
import { execFile } from "node:child_process";
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { prepareAssets } from "../build/assets.mjs";
import { quietEnv } from "../wrangler.mjs";
import { buildWorker, compiledAtStartup } from "../build/worker.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const run = promisify(execFile);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// KiB of the build's modules, and of those a new isolate compiles at startup.
async function compiledKib() {
	const metafile = await buildWorker({ write: false });
	const kib = (names) =>
		Math.round(
			names.filter((name) => name.endsWith(".js")).reduce((sum, name) => sum + metafile.outputs[name].bytes, 0) / 102.4,
		) / 10;
	return { startup_kib: kib(compiledAtStartup(metafile)), modules_kib: kib(Object.keys(metafile.outputs)) };
}

async function wrangler(args, cwd) {
	const { stdout } = await run(process.execPath, [WRANGLER, ...args], {
		cwd,
		env: quietEnv,
		maxBuffer: 64 * 1024 * 1024,
	});
	return stdout;
}

async function profiled(cwd, args, outfile) {
	const out = await wrangler(["check", "startup", "--outfile", outfile, ...args], cwd);
	const active = Number(/Active: ([\d.]+) ms/.exec(out)?.[1]);
	const [, bundle, gzip] = /Bundle: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out) ?? [];
	if (!Number.isFinite(active)) throw new Error(`wrangler check startup printed no active time:\n${out}`);
	return { active, bundle_kib: Number(bundle), gzip_kib: Number(gzip) };
}

// CPU ms to compile and evaluate a Worker's entry module in a fresh Node, with
// `cloudflare:workers` stubbed: `built` is the folder of its modules, `index.js` the entry.
async function nodeStartup(dir, built, runs) {
	const stub = join(dir, "workers-stub.mjs");
	writeFileSync(stub, "export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }\n");
	const modules = join(dir, "modules");
	rmSync(modules, { recursive: true, force: true });
	cpSync(built, modules, { recursive: true });
	for (const file of readdirSync(modules, { recursive: true }).filter((name) => name.endsWith(".js"))) {
		const path = join(modules, file);
		writeFileSync(
			path,
			readFileSync(path, "utf8").replaceAll(/from ?"cloudflare:workers"/g, `from ${JSON.stringify(stub)}`),
		);
	}
	writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
	writeFileSync(
		join(dir, "measure.mjs"),
		'const t = process.cpuUsage(); await import("./modules/index.js"); const d = process.cpuUsage(t); console.log((d.user + d.system) / 1000);\n',
	);
	const samples = [];
	for (let i = 0; i < runs; i++) samples.push(Number((await run(process.execPath, [join(dir, "measure.mjs")])).stdout));
	return median(samples);
}

export async function benchStartup({ runs = 7, nodeRuns = 21 } = {}) {
	prepareAssets();
	const work = mkdtempSync(join(tmpdir(), "startup-"));
	try {
		const date = /compatibility_date = "([^"]+)"/.exec(readFileSync(join(ROOT, "wrangler.toml"), "utf8"))[1];
		const bare = join(work, "bare");
		mkdirSync(bare);
		writeFileSync(
			join(bare, "index.js"),
			'export default { fetch() { return new Response("{}", { headers: { "content-type": "application/json" } }); } };\n',
		);
		writeFileSync(join(bare, "wrangler.toml"), `name = "bare"\nmain = "index.js"\ncompatibility_date = "${date}"\n`);

		const project = [];
		const baseline = [];
		// Interleaved, so that the machine's noise falls on both alike.
		for (let i = 0; i < runs; i++) {
			project.push(await profiled(ROOT, [], join(work, "project.cpuprofile")));
			baseline.push(await profiled(bare, [], join(work, "bare.cpuprofile")));
		}
		const built = join(work, "dist");
		await wrangler(["deploy", "--dry-run", "--outdir", built], ROOT);
		const nodeProject = await nodeStartup(work, built, nodeRuns);
		const bareBuilt = join(work, "bare-built");
		await wrangler(["deploy", "--dry-run", "--outdir", bareBuilt], bare);
		const nodeBare = await nodeStartup(work, bareBuilt, nodeRuns);
		return {
			...(await compiledKib()),
			runs,
			project_ms: median(project.map((p) => p.active)),
			bare_ms: median(baseline.map((p) => p.active)),
			project_runs_ms: project.map((p) => p.active),
			bare_runs_ms: baseline.map((p) => p.active),
			node_runs: nodeRuns,
			node_project_cpu_ms: nodeProject,
			node_bare_cpu_ms: nodeBare,
			bundle_kib: project[0].bundle_kib,
			gzip_kib: project[0].gzip_kib,
		};
	} finally {
		rmSync(work, { recursive: true, force: true });
	}
}

export function printStartup(s) {
	const round = (x) => Math.round(x * 10) / 10;
	console.log(`\nstartup of a new isolate (deploy build), median of ${s.runs} profiles each, interleaved\n`);
	console.log("| measure | bare Worker | project | difference |");
	console.log("|---|---|---|---|");
	console.log(
		`| wrangler check startup, active ms | ${s.bare_ms} | ${s.project_ms} | +${round(s.project_ms - s.bare_ms)} |`,
	);
	console.log(
		`| compile and evaluate in Node, CPU ms (median of ${s.node_runs}) | ${round(s.node_bare_cpu_ms)} | ${round(s.node_project_cpu_ms)} | +${round(s.node_project_cpu_ms - s.node_bare_cpu_ms)} |`,
	);
	console.log(`| bundle KiB (gzip) | | ${s.bundle_kib} (${s.gzip_kib}) | |`);
	console.log(
		`| KiB compiled at startup (entry and its static imports), of all modules | | ${s.startup_kib} of ${s.modules_kib} | |`,
	);
	console.log(`\nprofiles, ms: project ${s.project_runs_ms.join(", ")}; bare ${s.bare_runs_ms.join(", ")}`);
}

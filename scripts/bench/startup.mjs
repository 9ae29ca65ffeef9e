// The startup part of `npm run bench` (`-- --only startup` runs it alone): what a new isolate
// pays before its first request, for the deploy bundle (`wrangler deploy --minify`) and for a
// bare Worker that answers `{}`, measured the same way.
//
// - `wrangler check startup` profiles the script's startup in the local runtime and reports its
//   active time. The figure is wall-clock time between profiler samples, so it moves with
//   whatever else the machine runs: each side is profiled `runs` times and the median kept.
// - The same bundle compiled and evaluated in a fresh Node process (V8, as the runtime), CPU time
//   by process.cpuUsage, median of `nodeRuns`: a steadier figure of the same work, for telling
//   two builds apart.
// - The bundle's size, as wrangler reports it.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { prepareAssets } from "../build/assets.mjs";
import { quietEnv } from "../wrangler.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WRANGLER = join(ROOT, "node_modules/wrangler/bin/wrangler.js");
const run = promisify(execFile);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function wrangler(args, cwd) {
	const { stdout } = await run(process.execPath, [WRANGLER, ...args], { cwd, env: quietEnv, maxBuffer: 64 * 1024 * 1024 });
	return stdout;
}

async function profiled(cwd, args, outfile) {
	const out = await wrangler(["check", "startup", "--outfile", outfile, ...args], cwd);
	const active = Number(/Active: ([\d.]+) ms/.exec(out)?.[1]);
	const [, bundle, gzip] = /Bundle: ([\d.]+) KiB \/ gzip: ([\d.]+) KiB/.exec(out) ?? [];
	if (!Number.isFinite(active)) throw new Error(`wrangler check startup printed no active time:\n${out}`);
	return { active, bundle_kib: Number(bundle), gzip_kib: Number(gzip) };
}

// CPU ms to compile and evaluate a module in a fresh Node, with `cloudflare:workers` stubbed.
async function nodeStartup(dir, source, runs) {
	writeFileSync(join(dir, "workers-stub.mjs"), "export class DurableObject { constructor(ctx, env) { this.ctx = ctx; this.env = env; } }\n");
	writeFileSync(join(dir, "worker.mjs"), source.replaceAll(/from ?"cloudflare:workers"/g, 'from "./workers-stub.mjs"'));
	writeFileSync(join(dir, "measure.mjs"), 'const t = process.cpuUsage(); await import("./worker.mjs"); const d = process.cpuUsage(t); console.log((d.user + d.system) / 1000);\n');
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
		writeFileSync(join(bare, "index.js"), 'export default { fetch() { return new Response("{}", { headers: { "content-type": "application/json" } }); } };\n');
		writeFileSync(join(bare, "wrangler.toml"), `name = "bare"\nmain = "index.js"\ncompatibility_date = "${date}"\n`);

		const project = [];
		const baseline = [];
		// Interleaved, so that the machine's noise falls on both alike.
		for (let i = 0; i < runs; i++) {
			project.push(await profiled(ROOT, ["--args=--minify"], join(work, "project.cpuprofile")));
			baseline.push(await profiled(bare, [], join(work, "bare.cpuprofile")));
		}
		const built = join(work, "dist");
		await wrangler(["deploy", "--dry-run", "--minify", "--outdir", built], ROOT);
		const nodeProject = await nodeStartup(work, readFileSync(join(built, "index.js"), "utf8"), nodeRuns);
		const nodeBare = await nodeStartup(work, readFileSync(join(bare, "index.js"), "utf8"), nodeRuns);
		return {
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
	console.log(`\nstartup of a new isolate (deploy bundle, minified), median of ${s.runs} profiles each, interleaved\n`);
	console.log("| measure | bare Worker | project | difference |");
	console.log("|---|---|---|---|");
	console.log(`| wrangler check startup, active ms | ${s.bare_ms} | ${s.project_ms} | +${round(s.project_ms - s.bare_ms)} |`);
	console.log(`| compile and evaluate in Node, CPU ms (median of ${s.node_runs}) | ${round(s.node_bare_cpu_ms)} | ${round(s.node_project_cpu_ms)} | +${round(s.node_project_cpu_ms - s.node_bare_cpu_ms)} |`);
	console.log(`| bundle KiB (gzip) | | ${s.bundle_kib} (${s.gzip_kib}) | |`);
	console.log(`\nprofiles, ms: project ${s.project_runs_ms.join(", ")}; bare ${s.bare_runs_ms.join(", ")}`);
}

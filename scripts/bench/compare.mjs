// `npm run bench:compare [-- --twins N --rounds N ...]`: runs the shared side-by-side
// comparison (../shared/perf/compare.mjs, beside the project in CI and on developers'
// machines), which measures this project, a plain Worker and the least design with the same
// promises (credential at the D1 primary, cursors in the account's object) under `wrangler dev`
// in the same run, and prints two tables of ratios. It runs wrangler itself on a copy of the
// project, so the static assets are put in place first.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { prepareAssets } from "../build/assets.mjs";

// Its options are the shared script's, passed through; only --help is answered here, so that it
// answers even where ../shared is missing.
if (process.argv.includes("--help") || process.argv.includes("-h")) {
	process.stdout.write(`usage: npm run bench:compare [-- options of ../shared/perf/compare.mjs]

Measures this project, a plain Worker and the least design with the same promises under
\`wrangler dev\` in the same run, and prints two tables of ratios (docs/benchmarks.md). It needs
../shared/perf/compare.mjs beside the project; its options (--twins N, --rounds N, ...) are
that script's and are passed through.
`);
	process.exit(0);
}

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const COMPARE = fileURLToPath(new URL("../../../shared/perf/compare.mjs", import.meta.url));

if (!existsSync(COMPARE)) {
	console.error(`The comparison needs ../shared/perf/compare.mjs beside the project; ${COMPARE} is missing.`);
	process.exit(1);
}
prepareAssets();
const child = spawn(process.execPath, [COMPARE, "--project", ROOT, ...process.argv.slice(2)], {
	cwd: ROOT,
	stdio: "inherit",
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));

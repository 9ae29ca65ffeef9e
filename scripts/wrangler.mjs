// Runs the project's own wrangler and vitest on the Node that runs this script, with the
// settings every local command wants (no network look-ups of Cloudflare's metadata, no
// telemetry) and the static assets in place. npm scripts call it as a command:
//   node scripts/wrangler.mjs <wrangler|vitest> [args...]
// and the other scripts import wrangler(), wranglerDone() and applyMigrations() from it.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { prepareAssets } from "./build/assets.mjs";

const MODULES = fileURLToPath(new URL("../node_modules/", import.meta.url));
const TOOLS = ["wrangler", "vitest"];

export const quietEnv = { ...process.env, CLOUDFLARE_CF_FETCH_ENABLED: "false", WRANGLER_SEND_METRICS: "false" };

function binary(tool) {
	const { bin } = JSON.parse(readFileSync(join(MODULES, tool, "package.json"), "utf8"));
	return join(MODULES, tool, typeof bin === "string" ? bin : bin[tool]);
}

function run(tool, args, options) {
	prepareAssets();
	return spawn(process.execPath, [binary(tool), ...args], { stdio: "inherit", env: quietEnv, ...options });
}

export function wrangler(args, options = {}) {
	return run("wrangler", args, options);
}

export function wranglerDone(args, options = {}) {
	return new Promise((resolve, reject) => {
		const child = wrangler(args, options);
		child.on("exit", (code) => (code === 0 ? resolve() : reject(new Error(`wrangler ${args[0]} exited with ${code}`))));
	});
}

// Applies the local D1 migrations quietly to each shard (DB_0, DB_1, ...; by default every one
// wrangler.toml declares), one after another: wrangler reprints its table of migrations after
// each one it applies, a thousand lines on a first start. Resolves to how many it applied to
// each binding; on a failure, rejects with the binding and everything wrangler printed.
export async function applyMigrations({ persistTo, bindings } = {}) {
	bindings ??= await declaredBindings();
	const applied = {};
	for (const binding of bindings) applied[binding] = await applyTo(binding, persistTo);
	return applied;
}

// wrangler.toml's shards, read only when asked: reading it loads wrangler's own config reader.
async function declaredBindings() {
	const [{ readConfig }, { declaredShards }] = await Promise.all([
		import("./deploy/config.mjs"),
		import("./shards.mjs"),
	]);
	return declaredShards(readConfig());
}

function applyTo(binding, persistTo) {
	const args = ["d1", "migrations", "apply", binding, "--local", ...(persistTo ? ["--persist-to", persistTo] : [])];
	return new Promise((resolve, reject) => {
		const child = wrangler(args, { stdio: ["ignore", "pipe", "pipe"] });
		let out = "";
		child.stdout.on("data", (chunk) => (out += chunk));
		child.stderr.on("data", (chunk) => (out += chunk));
		child.on("error", reject);
		child.on("exit", (code) => {
			if (code !== 0) return reject(new Error(`wrangler d1 migrations apply ${binding} exited with ${code}:\n${out}`));
			resolve(countMigrations(out));
		});
	});
}

// The one line `npm start` prints for applyMigrations' answer: one count when every shard took
// the same, else each shard's.
export function describeMigrations(applied) {
	const bindings = Object.keys(applied);
	const counts = Object.values(applied);
	const plural = (n) => `${n} D1 migration${n === 1 ? "" : "s"}`;
	if (counts.every((n) => n === 0)) return `Every local database is up to date (${bindings.join(", ")})`;
	const databases = `the local database${bindings.length === 1 ? "" : "s"}`;
	if (counts.every((n) => n === counts[0]))
		return `Applied ${plural(counts[0])} to ${databases} ${bindings.join(", ")}`;
	const each = bindings.map((binding) => `${applied[binding] || "none"} to ${binding}`).join(", ");
	return `Applied D1 migrations to ${databases}: ${each}`;
}

// The distinct migration files named in wrangler's tables; none when it had nothing to apply.
export function countMigrations(output) {
	if (output.includes("No migrations to apply")) return 0;
	return new Set(output.match(/\b\d{4}_[\w-]+\.sql\b/g) ?? []).size;
}

const USAGE = `usage: node scripts/wrangler.mjs <${TOOLS.join("|")}> [args...]

Runs the project's own wrangler or vitest on this Node, without Cloudflare metadata look-ups
or telemetry, with the static assets in place. \`npm test\`, \`npm run build\` and the other
npm scripts call it; \`node scripts/wrangler.mjs wrangler --help\` is wrangler's own help.
`;

if (import.meta.url === pathToFileURL(process.argv[1]).href) {
	const [tool, ...args] = process.argv.slice(2);
	if (tool === "--help" || tool === "-h") {
		process.stdout.write(USAGE);
		process.exit(0);
	}
	if (!TOOLS.includes(tool)) {
		console.error(USAGE);
		process.exit(2);
	}
	const child = run(tool, args);
	for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => child.kill(signal));
	child.on("exit", (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

// `npm run shards:move -- --bucket N --to DB_k`: moves a bucket of accounts to another D1
// database while the service runs (docs/scaling.md, "Moving a bucket"). It drives the admin
// routes: the Worker refuses the bucket's writes and copies its rows; this script then flips
// SHARDS in wrangler.toml (a running `npm start` reloads it; with --url it deploys), waits
// until the Worker serves the new map, and the Worker lets writes resume on the target and
// deletes the source's rows. `--abort` undoes a move not yet flipped.
import { spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseShards, remapBucket } from "../src/base/shard-map.ts";
import { parseCli } from "./cli.mjs";
import { readConfig } from "./deploy/config.mjs";
import { readDevVars } from "./dev/dev-vars.mjs";
import { readSecretFile } from "./dev/secrets.mjs";
import { findServer } from "./dev/served.mjs";
import { declaredShards } from "./shards.mjs";

const USAGE = `
usage: npm run shards:move -- --bucket N --to DB_k [options]
       npm run shards:move -- --bucket N --abort [options]

Moves bucket N (0-255) of accounts to the D1 binding DB_k while the service runs: the bucket's
writes answer 503241 until the move ends, its rows are copied, SHARDS in wrangler.toml is
changed to map N to DB_k, and once the Worker serves that map the source's rows are deleted.
Exits 0 when the move is done; a killed move keeps refusing the bucket's writes until it is
run again or aborted. Without --url it acts on the \`npm start\` of this checkout.

  --bucket N           the bucket to move, 0-255
  --to DB_k            the binding to move it to (declared in wrangler.toml, not its current one)
  --abort              undo the bucket's move not yet flipped: the copy goes, writes resume
  --url URL            a deployed Worker: the flip deploys with \`npm run deploy\`
  --admin-token-file F read the admin token from file F
  -h, --help           this text

The admin token comes from --admin-token-file, else ADMIN_TOKEN in the environment, else the
.dev.vars that \`npm start\` wrote. It is never taken on the command line, which npm prints.
`;

const WRANGLER_TOML = fileURLToPath(new URL("../wrangler.toml", import.meta.url));
const POLL_MS = 500;

const { values } = parseCli({
	usage: USAGE,
	options: {
		bucket: { type: "string" },
		to: { type: "string" },
		abort: { type: "boolean", default: false },
		url: { type: "string" },
		"admin-token-file": { type: "string" },
	},
});

function fail(message) {
	console.error(message);
	process.exit(1);
}

const bucket = Number(values.bucket);
if (values.bucket === undefined || !/^\d{1,3}$/.test(values.bucket) || bucket > 255)
	fail("--bucket must be a bucket, 0-255");
const config = readConfig();
const declared = declaredShards(config);
if (!values.abort && (values.to === undefined || !declared.includes(values.to)))
	fail(`--to must name a D1 binding wrangler.toml declares: ${declared.join(", ")}`);

const token =
	readSecretFile(values["admin-token-file"], "--admin-token-file") ??
	(process.env.ADMIN_TOKEN || readDevVars().ADMIN_TOKEN);
if (!token) fail("No admin token: set ADMIN_TOKEN, pass --admin-token-file FILE, or run `npm start` once");

const base = findServer(values.url);

// `patient`: the server may be reloading (a flip of `npm start`) or deploying; it is asked
// again for up to RELOAD_MS.
const RELOAD_MS = 120_000;
async function api(method, path, body, patient = false) {
	let response;
	for (const deadline = Date.now() + RELOAD_MS; ; ) {
		try {
			response = await fetch(`${base}${path}`, {
				method,
				headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
				body: body ? JSON.stringify(body) : undefined,
			});
			break;
		} catch (error) {
			if (!patient || Date.now() > deadline)
				fail(`The server at ${base} is unreachable (${error.cause?.code ?? error.message}); is \`npm start\` running?`);
			await sleep(POLL_MS);
		}
	}
	const answer = await response.json().catch(() => ({}));
	return { status: response.status, body: answer };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function until(state) {
	for (let last = ""; ; ) {
		const { status, body } = await api("GET", `/admin/shards/moves/${bucket}`);
		if (status !== 200) fail(`The move of bucket ${bucket} is gone (${status}: ${body.description ?? ""})`);
		const line = `${body.state}: ${body.copied_rows} rows copied, ${body.deleted_rows} deleted`;
		if (line !== last) console.log(`bucket ${bucket} ${line}`);
		last = line;
		if (body.state === state) return body;
		if (body.state === "aborted" || body.state === "done") fail(`The move ended ${body.state}`);
		await sleep(POLL_MS);
	}
}

if (values.abort) {
	const { status, body } = await api("DELETE", `/admin/shards/moves/${bucket}`);
	if (status !== 200) fail(`Not aborted (${status}): ${body.description ?? ""}`);
	await until("aborted");
	console.log(`bucket ${bucket} stays where it was; its writes are accepted again`);
	process.exit(0);
}

const served = await api("GET", "/admin/shards");
if (served.status !== 200) fail(`GET /admin/shards answered ${served.status}: ${served.body.description ?? ""}`);
const map = parseShards(served.body.shards, served.body.bindings);
if (!map.ok) fail(`The server's SHARDS is invalid: ${map.fault}`);
// A move of this bucket to the same binding that a killed run left goes on where it stands.
const running = await api("GET", `/admin/shards/moves/${bucket}`);
const resumes =
	running.status === 200 &&
	running.body.target === values.to &&
	["grace", "copying", "copied", "finishing"].includes(running.body.state);
if (resumes) console.log(`bucket ${bucket}: the move to ${values.to} goes on (${running.body.state})`);
else {
	if (map.bindings[bucket] === values.to) fail(`Bucket ${bucket} is on ${values.to} already`);
	const started = await api("POST", "/admin/shards/moves", { bucket, to: values.to });
	if (started.status !== 201) fail(`Not started (${started.status}): ${started.body.description ?? ""}`);
	console.log(
		`bucket ${bucket}: ${map.bindings[bucket]} -> ${values.to}; its writes answer 503241 until the move ends`,
	);
}
if (!resumes || running.body.state !== "finishing") await until("copied");

// The flip: the map in wrangler.toml, which later starts and deploys keep.
const flipped = remapBucket(map.bindings, bucket, values.to);
const text = readFileSync(WRANGLER_TOML, "utf8");
const line = /^SHARDS = "[^"]*"$/m;
if (!line.test(text)) fail('wrangler.toml has no line SHARDS = "..." to change');
if (served.body.shards !== flipped) {
	writeFileSync(WRANGLER_TOML, text.replace(line, `SHARDS = "${flipped}"`));
	console.log(`wrangler.toml: SHARDS = "${flipped}"`);
}
if (values.url && served.body.shards !== flipped) {
	const deploy = spawnSync("npm", ["run", "deploy"], { stdio: "inherit" });
	if (deploy.status !== 0) fail("The deploy failed: the move waits, copied; run again to flip, or --abort");
}
// Writes resume only once the Worker serves the new map.
for (;;) {
	const { status, body } = await api("GET", "/admin/shards", undefined, true);
	if (status === 200 && body.shards === flipped) break;
	await sleep(POLL_MS);
}
await until("done");
console.log(`bucket ${bucket} is on ${values.to}`);

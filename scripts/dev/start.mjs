// `npm start [-- --port N]`, or `npm run dev`: a check of SHARDS, the D1 migrations on every local
// shard, an ADMIN_TOKEN, a WEBHOOK_KEY and a TOKEN_KEY in .dev.vars on first start, then
// `wrangler dev` on 127.0.0.1 with every binding simulated locally and PUBLIC_URL set to that
// local origin, which it also leaves in .wrangler/ for the other dev scripts (served.mjs).
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { parseCli } from "../cli.mjs";
import { DEV_VARS, readDevVars } from "./dev-vars.mjs";
import { clearServed, writeServed } from "./served.mjs";
import { applyMigrations, describeMigrations, quietEnv, wrangler } from "../wrangler.mjs";
import { readConfig } from "../deploy/config.mjs";
import { checkShards } from "../shards.mjs";

const { values } = parseCli({
	usage: `
usage: npm start [-- --port N]      (or npm run dev)

Serves the Worker on http://127.0.0.1:8787 (or port N) with local D1, Durable Objects, Queues
and R2: refuses a SHARDS that does not map every bucket to a declared D1 binding, applies the
D1 migrations to the local database of every shard (DB_0, DB_1, ...), writes a random
ADMIN_TOKEN, WEBHOOK_KEY and TOKEN_KEY into .dev.vars the first time, and runs
\`wrangler dev\`. Each request prints the service's own JSON log line. \`npm run bootstrap\`
and the other dev scripts find the port it serves on.

  --port N      the port (default: 8787)
  -h, --help    this text
`,
	options: { port: { type: "string", default: "8787" } },
});

// Before anything else: a Worker on a SHARDS that misses a bucket, maps one twice or names an
// undeclared binding answers every request 500241. The map checked is the one wrangler dev
// runs with, .dev.vars' over wrangler.toml's.
let shards;
try {
	shards = checkShards(readConfig(), readDevVars().SHARDS);
} catch (error) {
	console.error(error.message);
	process.exit(1);
}

// WEBHOOK_KEY seals stored webhook secrets: kept across starts, or they could not be opened.
// TOKEN_KEY signs User Tokens: kept too, so that tokens live across a restart.
for (const name of ["ADMIN_TOKEN", "WEBHOOK_KEY", "TOKEN_KEY"]) {
	if (readDevVars()[name]) continue;
	appendFileSync(DEV_VARS, `${name}=${randomBytes(32).toString("base64url")}\n`);
	console.log(`Wrote a new ${name} to ${DEV_VARS}`);
}

try {
	console.log(describeMigrations(await applyMigrations({ bindings: shards })));
} catch (error) {
	console.error(error.message);
	process.exit(1);
}

// wrangler dev logs every request once more after the service's own JSON line, and no log
// level keeps the one without the other (the Worker's console.log and wrangler's request
// lines share the "log"/"info" levels): its request lines are dropped here, everything else
// it prints passes through, with its colours when this is a terminal.
const REQUEST_LINE = /^\[wrangler:info\] [A-Z]+ \S* \d{3}\b.*\(\d+ms\)/;
// biome-ignore lint/suspicious/noControlCharactersInRegex: the escape character starts every ANSI colour code.
const ANSI = /\x1b\[[0-9;]*m/g;

// Local receivers listen on loopback, so the callback policy is relaxed for development only.
const origin = `http://127.0.0.1:${values.port}`;
const dev = wrangler(
	["dev", "--ip", "127.0.0.1", "--port", values.port, "--var", "CALLBACK_POLICY:any", "--var", `PUBLIC_URL:${origin}`],
	{
		stdio: ["inherit", "pipe", "inherit"],
		env: { ...quietEnv, ...(process.stdout.isTTY && { FORCE_COLOR: "1" }) },
	},
);
createInterface({ input: dev.stdout, crlfDelay: Number.POSITIVE_INFINITY }).on("line", (line) => {
	if (!REQUEST_LINE.test(line.replace(ANSI, ""))) process.stdout.write(`${line}\n`);
});
writeServed(origin);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => {
	clearServed();
	process.exit(code ?? 0);
});

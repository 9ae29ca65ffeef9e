// `npm start [-- --port N]`, or `npm run dev`: local D1 migrations, an ADMIN_TOKEN, a WEBHOOK_KEY
// and a TOKEN_KEY in .dev.vars on first start, then `wrangler dev` on 127.0.0.1 with every binding
// simulated locally and PUBLIC_URL set to that local origin, which it also leaves in .wrangler/
// for `npm run bootstrap`.
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DEV_VARS, readDevVars } from "./dev-vars.mjs";
import { clearServed, writeServed } from "./served.mjs";
import { wrangler, wranglerDone } from "../wrangler.mjs";

const { values } = parseArgs({ options: { port: { type: "string", default: "8787" } } });

// WEBHOOK_KEY seals stored webhook secrets: kept across starts, or they could not be opened.
// TOKEN_KEY signs User Tokens: kept too, so that tokens live across a restart.
for (const name of ["ADMIN_TOKEN", "WEBHOOK_KEY", "TOKEN_KEY"]) {
	if (readDevVars()[name]) continue;
	appendFileSync(DEV_VARS, `${name}=${randomBytes(32).toString("base64url")}\n`);
	console.log(`Wrote a new ${name} to ${DEV_VARS}`);
}

await wranglerDone(["d1", "migrations", "apply", "DB", "--local"]);

// Local receivers listen on loopback, so the callback policy is relaxed for development only.
const origin = `http://127.0.0.1:${values.port}`;
const dev = wrangler(["dev", "--ip", "127.0.0.1", "--port", values.port, "--var", "CALLBACK_POLICY:any", "--var", `PUBLIC_URL:${origin}`]);
writeServed(origin);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => {
	clearServed();
	process.exit(code ?? 0);
});

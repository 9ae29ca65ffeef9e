// `npm start [-- --port N]`: local D1 migrations, an ADMIN_TOKEN in .dev.vars on first start,
// then `wrangler dev` on 127.0.0.1 with every binding simulated locally.
import { randomBytes } from "node:crypto";
import { appendFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { DEV_VARS, readDevVars } from "./dev-vars.mjs";
import { wrangler, wranglerDone } from "./wrangler.mjs";

const { values } = parseArgs({ options: { port: { type: "string", default: "8787" } } });

if (!readDevVars().ADMIN_TOKEN) {
	appendFileSync(DEV_VARS, `ADMIN_TOKEN=${randomBytes(32).toString("base64url")}\n`);
	console.log(`Wrote a new ADMIN_TOKEN to ${DEV_VARS}`);
}

await wranglerDone(["d1", "migrations", "apply", "DB", "--local"]);

// Local receivers listen on loopback, so the callback policy is relaxed for development only.
const dev = wrangler(["dev", "--ip", "127.0.0.1", "--port", values.port, "--var", "CALLBACK_POLICY:any"]);
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dev.kill(signal));
dev.on("exit", (code) => process.exit(code ?? 0));

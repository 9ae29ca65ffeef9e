// `npm run deploy`: creates the docs bucket when the Cloudflare account has none of that name,
// applies the remote D1 migrations, then deploys the Worker minified with its assets. Run it
// again and the bucket step finds the bucket and changes nothing.
import { readFileSync } from "node:fs";
import { wranglerDone } from "../wrangler.mjs";

// The bucket wrangler.toml binds as DOCS (the only [[r2_buckets]] entry).
const config = readFileSync(new URL("../../wrangler.toml", import.meta.url), "utf8");
const bucket = /\[\[r2_buckets\]\][^[]*?bucket_name\s*=\s*"([^"]+)"/.exec(config)?.[1];
if (!bucket) throw new Error("wrangler.toml binds no R2 bucket");

try {
	await wranglerDone(["r2", "bucket", "info", bucket], { stdio: ["ignore", "ignore", "ignore"] });
	console.log(`R2 bucket ${bucket} exists`);
} catch {
	console.log(`creating R2 bucket ${bucket}`);
	await wranglerDone(["r2", "bucket", "create", bucket]);
}
await wranglerDone(["d1", "migrations", "apply", "DB", "--remote"]);
await wranglerDone(["deploy", "--minify"]);

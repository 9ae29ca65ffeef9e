// `npm run deploy [-- --public-url https://registry.example.com]`: deploys the Worker to the
// Cloudflare account `wrangler login` reaches, creating what is missing first. It asks wrangler
// what exists, lets plan.mjs decide, then runs the steps: the missing queues, the remote D1
// migrations of every shard (DB_0, DB_1, ...) and `wrangler deploy`, which creates the databases
// and the bucket when absent and uploads any required secret the Worker lacks, generated here
// and printed once. Run again, it finds everything and deploys the code (docs/deploying.md).
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseCli } from "../cli.mjs";
import { quietEnv, wrangler, wranglerDone } from "../wrangler.mjs";
import { readConfig } from "./config.mjs";
import { chooseAccount, needsSubdomain, planDeploy, queuesOf } from "./plan.mjs";
import { checkShards } from "../shards.mjs";

const { values } = parseCli({
	usage: `
usage: npm run deploy [-- --public-url URL]

Deploys the Worker to the Cloudflare account \`npx wrangler login\` reaches, creating first what
it lacks: the D1 databases, the R2 bucket, the queues and the required secrets (generated and
printed once); then applies the remote D1 migrations to every shard (DB_0, DB_1, ...) and
deploys. It refuses a SHARDS that does not map every bucket to a declared binding, and a
binding still named DB. Run again, it deploys the code and changes nothing else
(docs/deploying.md).

  --public-url URL   the service's public origin (default: the Worker's workers.dev origin)
  -h, --help         this text
`,
	options: { "public-url": { type: "string" } },
});
const config = readConfig();
let env = quietEnv;

// Runs wrangler quietly and hands back what it printed, for the commands that answer a question.
function ask(args) {
	return new Promise((resolve, reject) => {
		const child = wrangler(args, { stdio: ["ignore", "pipe", "pipe"], env });
		let out = "";
		let err = "";
		child.stdout.on("data", (chunk) => (out += chunk));
		child.stderr.on("data", (chunk) => (err += chunk));
		child.on("error", reject);
		child.on("exit", (code) => resolve({ code, out, err }));
	});
}

async function askJson(args) {
	const { code, out, err } = await ask(args);
	if (code !== 0) throw new Error(`wrangler ${args.join(" ")} failed:\n${err || out}`);
	return JSON.parse(out);
}

// `wrangler queues info` answers "does not exist" for a missing queue; anything else is a failure
// the deploy must not guess past.
async function queueExists(name) {
	const { code, out, err } = await ask(["queues", "info", name]);
	if (code === 0 && out.includes(`Queue Name: ${name}\n`)) return true;
	if (`${out}${err}`.includes("does not exist")) return false;
	throw new Error(`wrangler queues info ${name} failed:\n${err || out}`);
}

// null when the Worker does not exist yet (its first deploy), which wrangler reports as not found.
async function secretNames() {
	const { code, out, err } = await ask(["secret", "list", "--format", "json"]);
	if (code === 0) return JSON.parse(out).map((secret) => secret.name);
	if (`${out}${err}`.includes(`Worker "${config.name}"`) && `${out}${err}`.includes("not found")) return null;
	throw new Error(`wrangler secret list failed:\n${err || out}`);
}

// The account's workers.dev label. wrangler prints it only once it has deployed, too late for the
// PUBLIC_URL that deploy carries, so it is read from Cloudflare's API with wrangler's credentials.
async function workersSubdomain(account) {
	const auth = await askJson(["auth", "token", "--json"]);
	const headers =
		auth.type === "api_key"
			? { "X-Auth-Key": auth.key, "X-Auth-Email": auth.email }
			: { authorization: `Bearer ${auth.token}` };
	const api = process.env.CLOUDFLARE_API_BASE_URL ?? "https://api.cloudflare.com/client/v4";
	const response = await fetch(`${api}/accounts/${account}/workers/subdomain`, { headers });
	const body = await response.json().catch(() => ({}));
	if (response.ok) return body.result?.subdomain;
	// 10007: the account has not registered a workers.dev subdomain.
	if (body.errors?.some((error) => error.code === 10007)) return undefined;
	throw new Error(
		`Reading the account's workers.dev subdomain answered ${response.status}: ${JSON.stringify(body.errors ?? body)}`,
	);
}

async function main() {
	// A map the Worker could not run with stops the deploy before wrangler is asked anything.
	checkShards(config);
	const whoami = await ask(["whoami", "--json"]);
	if (whoami.code !== 0)
		throw new Error(
			`not logged in to Cloudflare: run \`npx wrangler login\` first${whoami.err ? `\n${whoami.err}` : ""}`,
		);
	const account = chooseAccount(
		JSON.parse(whoami.out).accounts ?? [],
		process.env.CLOUDFLARE_ACCOUNT_ID ?? config.account_id,
	);
	env = { ...quietEnv, CLOUDFLARE_ACCOUNT_ID: account };

	const publicUrl = values["public-url"];
	const facts = { queues: [], secrets: await secretNames(), databases: [] };
	for (const queue of queuesOf(config)) if (await queueExists(queue)) facts.queues.push(queue);
	facts.databases = (await askJson(["d1", "list", "--json"])).map((database) => database.name);
	if (needsSubdomain(config, publicUrl)) facts.subdomain = await workersSubdomain(account);
	const { steps, secrets, origin } = planDeploy(config, facts, { publicUrl });
	console.log(`PUBLIC_URL: ${origin ?? `${config.vars.PUBLIC_URL} (wrangler.toml)`}`);

	// 43 random characters each, past the 32 the Worker asks for.
	const generated = Object.fromEntries(secrets.map((name) => [name, randomBytes(32).toString("base64url")]));

	for (const step of steps) {
		console.log(`\n> wrangler ${step.join(" ")}`);
		if (step[0] !== "deploy" || secrets.length === 0) {
			await wranglerDone(step, { env });
			continue;
		}
		// The secrets go up with the deploy, so a new Worker never runs without them. The file names
		// them only: wrangler takes a dotenv file's values from the environment when it holds the
		// same names, so the values never touch the disk.
		const dir = mkdtempSync(join(tmpdir(), "deploy-"));
		try {
			writeFileSync(join(dir, "secrets.env"), secrets.map((name) => `${name}=\n`).join(""), { mode: 0o600 });
			await wranglerDone([...step, "--secrets-file", join(dir, "secrets.env")], { env: { ...env, ...generated } });
		} finally {
			rmSync(dir, { recursive: true, force: true });
		}
		console.log("\nNew secrets, set on the Worker and shown only now (keep ADMIN_TOKEN: it creates accounts):");
		for (const [name, value] of Object.entries(generated)) console.log(`  ${name}=${value}`);
	}

	const base = origin ?? config.vars.PUBLIC_URL;
	console.log(`\nDeployed to ${base}. An account: ADMIN_TOKEN=<ADMIN_TOKEN> npm run bootstrap -- --url ${base}`);
}

// A failed step names itself; wrangler has printed why.
main().catch((error) => {
	console.error(`\nnpm run deploy stopped: ${error.message}`);
	process.exit(1);
});

// What `npm run deploy` does, decided from wrangler.toml and from what the Cloudflare account
// already holds. Nothing here reaches the network or the disk: deploy.mjs asks wrangler for the
// facts and runs the steps, and the unit tests hand in made-up facts. The steps are wrangler's
// own arguments, in the order they run.
import { checkShards } from "../shards.mjs";

// A shard's migrations, against the database wrangler finds by its binding's database_name.
const migrate = (binding) => ["d1", "migrations", "apply", binding, "--remote"];

// Every queue the Worker sends to or reads from; a consumer's dead-letter queue is one too.
export function queuesOf(config) {
	const { producers = [], consumers = [] } = config.queues ?? {};
	const names = [...producers.map((p) => p.queue), ...consumers.flatMap((c) => [c.queue, c.dead_letter_queue])];
	return [...new Set(names.filter(Boolean))];
}

// The account every wrangler call acts on. One that is named wins; a login that reaches several
// accounts must name one, or each command would ask again and could be answered differently.
export function chooseAccount(accounts, named) {
	if (named) return named;
	if (accounts.length === 1) return accounts[0].id;
	const list = accounts.map((a) => `  ${a.id}  ${a.name}`).join("\n");
	throw new Error(
		`This login reaches ${accounts.length} Cloudflare accounts: set CLOUDFLARE_ACCOUNT_ID to one of\n${list}`,
	);
}

// Whether the origin must come from the account's workers.dev subdomain: nothing else gives one.
export function needsSubdomain(config, publicUrl) {
	return !publicUrl && !config.vars?.PUBLIC_URL;
}

// The PUBLIC_URL to pass with the deploy, or undefined when wrangler.toml's value stands. The
// Worker builds confirmation and download URLs on it and never on a request's Host header, so
// a deploy that knows no origin stops rather than ship a service that cannot send them.
export function publicOrigin(config, publicUrl, subdomain) {
	if (publicUrl) {
		const url = URL.parse(publicUrl);
		if (url?.protocol !== "https:") throw new Error(`--public-url must be an https URL, not ${publicUrl}`);
		return url.origin;
	}
	if (config.vars?.PUBLIC_URL) return undefined;
	if (config.workers_dev === false)
		throw new Error("workers_dev is off: set PUBLIC_URL in wrangler.toml [vars] or pass --public-url");
	if (!subdomain) {
		throw new Error(
			"The account has no workers.dev subdomain yet: register one (Workers & Pages in the dashboard) or pass --public-url",
		);
	}
	return `https://${config.name}.${subdomain}.workers.dev`;
}

// Refuses, before anything is asked or done, a wrangler.toml whose SHARDS the Worker could not
// run with (it would answer every request 500241) or that still declares the binding DB.
// facts: queues (names that exist), secrets (names the Worker has; null when there is no Worker
// yet), databases (names of the account's D1 databases), subdomain (the account's workers.dev
// label, when needsSubdomain asked for it). Returns { steps, secrets, origin }: `secrets` are the
// required ones to generate, uploaded with the deploy step.
export function planDeploy(config, facts, { publicUrl } = {}) {
	const shards = checkShards(config);
	const origin = publicOrigin(config, publicUrl, facts.subdomain);
	const secrets = (config.secrets?.required ?? []).filter((name) => !facts.secrets?.includes(name));
	const steps = queuesOf(config)
		.filter((queue) => !facts.queues.includes(queue))
		.map((queue) => ["queues", "create", queue]);
	const deploy = ["deploy", ...(origin ? ["--var", `PUBLIC_URL:${origin}`] : [])];
	// A database that exists is migrated before the code that needs the new schema goes out;
	// the old code meets only additions for those seconds. A database that does not exist yet
	// (every shard's on a first deploy, a shard's just declared) only `wrangler deploy` creates
	// here, so its migrations follow: the new Worker meets it empty until they finish. On a first
	// deploy nobody holds the admin token yet; a shard added later is best declared with no
	// bucket mapped to it, so nothing reads it before its tables are there (docs/deploying.md,
	// "Adding a shard later").
	const exists = (binding) => {
		const name = config.d1_databases.find((d) => d.binding === binding).database_name;
		return name !== undefined && facts.databases.includes(name);
	};
	steps.push(
		...shards.filter(exists).map(migrate),
		deploy,
		...shards.filter((binding) => !exists(binding)).map(migrate),
	);
	return { steps, secrets, origin };
}

import { describe, expect, it } from "vitest";
import { readConfig } from "../../../scripts/deploy/config.mjs";
import { chooseAccount, planDeploy, queuesOf } from "../../../scripts/deploy/plan.mjs";
import { checkShards } from "../../../scripts/shards.mjs";

// `npm run deploy`'s decisions against the real wrangler.toml, with the account's answers made
// up: a fresh account, one deployed before, and the cases in between.
const config = readConfig();

const QUEUES = ["twin-webhooks", "twin-webhooks-dlq"];
const SECRETS = ["ADMIN_TOKEN", "WEBHOOK_KEY", "TOKEN_KEY"];
const ORIGIN = "https://twin-registry.example-team.workers.dev";
// One step per shard, in binding order.
const MIGRATE_0 = ["d1", "migrations", "apply", "DB_0", "--remote"];
const MIGRATE_1 = ["d1", "migrations", "apply", "DB_1", "--remote"];
const DEPLOY = ["deploy", "--var", `PUBLIC_URL:${ORIGIN}`];

const fresh = { queues: [], secrets: null, databases: [], subdomain: "example-team" };
const DATABASES = ["twin-registry", "twin-registry-1"];
const deployed = { queues: QUEUES, secrets: SECRETS, databases: DATABASES, subdomain: "example-team" };

describe("npm run deploy's plan", () => {
	it("reads what it must create from wrangler.toml, which names no placeholder id", () => {
		expect(queuesOf(config)).toEqual(QUEUES);
		expect(config.secrets?.required).toEqual(SECRETS);
		expect(config.d1_databases).toEqual([
			expect.objectContaining({ binding: "DB_0", database_name: "twin-registry" }),
			expect.objectContaining({ binding: "DB_1", database_name: "twin-registry-1" }),
		]);
		expect(config.d1_databases).toEqual([
			expect.not.objectContaining({ database_id: expect.anything() }),
			expect.not.objectContaining({ database_id: expect.anything() }),
		]);
		expect(config.vars?.PUBLIC_URL).toBe("");
	});

	it("on a fresh account creates the queues, deploys with three new secrets (which creates the databases and the bucket), then migrates each shard", () => {
		expect(planDeploy(config, fresh)).toEqual({
			steps: [
				["queues", "create", "twin-webhooks"],
				["queues", "create", "twin-webhooks-dlq"],
				DEPLOY,
				MIGRATE_0,
				MIGRATE_1,
			],
			secrets: SECRETS,
			origin: ORIGIN,
		});
	});

	it("on an account deployed before migrates both shards first, then deploys the code and nothing else", () => {
		expect(planDeploy(config, deployed)).toEqual({
			steps: [MIGRATE_0, MIGRATE_1, DEPLOY],
			secrets: [],
			origin: ORIGIN,
		});
	});

	it("creates only what is missing, and never replaces a secret the Worker has", () => {
		const plan = planDeploy(config, {
			...deployed,
			queues: ["twin-webhooks"],
			secrets: ["ADMIN_TOKEN", "TOKEN_KEY", "OTHER"],
		});
		expect(plan.steps).toEqual([["queues", "create", "twin-webhooks-dlq"], MIGRATE_0, MIGRATE_1, DEPLOY]);
		expect(plan.secrets).toEqual(["WEBHOOK_KEY"]);
	});

	it("takes a custom domain's origin from --public-url or wrangler.toml instead of workers.dev", () => {
		const custom = planDeploy(
			config,
			{ ...deployed, subdomain: undefined },
			{ publicUrl: "https://registry.example.com/ignored/path" },
		);
		expect(custom.steps.at(-1)).toEqual(["deploy", "--var", "PUBLIC_URL:https://registry.example.com"]);
		const configured = { ...config, vars: { ...config.vars, PUBLIC_URL: "https://registry.example.com" } };
		const kept = planDeploy(configured, { ...deployed, subdomain: undefined });
		expect(kept.steps.at(-1)).toEqual(["deploy"]);
		expect(kept.origin).toBeUndefined();
	});

	it("stops before doing anything when it cannot know the public origin", () => {
		expect(() => planDeploy(config, { ...fresh, subdomain: undefined })).toThrow(/no workers.dev subdomain/);
		expect(() => planDeploy({ ...config, workers_dev: false }, deployed)).toThrow(/workers_dev is off/);
		expect(() => planDeploy(config, deployed, { publicUrl: "http://registry.example.com" })).toThrow(/https/);
		expect(() => planDeploy(config, deployed, { publicUrl: "registry.example.com" })).toThrow(/https/);
	});
});

// docs/deploying.md, "Upgrading to shards": the binding DB renamed DB_0 keeps its database.
describe("npm run deploy's shards", () => {
	const single = { ...deployed, databases: ["twin-registry"] };

	it("upgrading a single-database install migrates DB_0 (its new migrations) before the code, DB_1 once the deploy has made it", () => {
		expect(planDeploy(config, single).steps).toEqual([MIGRATE_0, DEPLOY, MIGRATE_1]);
	});

	it("migrates every declared shard in binding order, DB_10 after DB_2", () => {
		const many = {
			...config,
			d1_databases: [0, 10, 2, 1].map((k) => ({ binding: `DB_${k}`, database_name: `db-${k}` })),
			vars: { ...config.vars, SHARDS: "0-63:DB_0,64-127:DB_1,128-191:DB_2,192-255:DB_10" },
		};
		const plan = planDeploy(many, { ...deployed, databases: ["db-0", "db-1", "db-2"] });
		expect(plan.steps.map((step) => step[3] ?? step[0])).toEqual(["DB_0", "DB_1", "DB_2", "deploy", "DB_10"]);
	});

	it("refuses a SHARDS the Worker could not run with, naming the fault, before planning anything", () => {
		const withShards = (SHARDS: string) => ({ ...config, vars: { ...config.vars, SHARDS } });
		expect(() => planDeploy(withShards("0-127:DB_0"), deployed)).toThrow("SHARDS is invalid: bucket 128 is not mapped");
		expect(() => planDeploy(withShards("0-128:DB_0,128-255:DB_1"), deployed)).toThrow(
			"SHARDS is invalid: bucket 128 is mapped twice",
		);
		expect(() => planDeploy(withShards("0-127:DB_0,128-255:DB_2"), deployed)).toThrow(
			'SHARDS is invalid: "128-255:DB_2" names DB_2, which is not a declared D1 binding DB_k',
		);
		expect(() => planDeploy(withShards(""), deployed)).toThrow("SHARDS is invalid: SHARDS is empty");
		// Even with no subdomain to find: the map is the first thing checked.
		expect(() => planDeploy(withShards("0-127:DB_0"), { ...fresh, subdomain: undefined })).toThrow(/SHARDS is invalid/);
	});

	it("refuses a wrangler.toml that still declares the binding DB, telling to rename it DB_0", () => {
		const old = {
			...config,
			d1_databases: [{ binding: "DB", database_name: "twin-registry" }],
			vars: { ...config.vars, SHARDS: "0-255:DB_0" },
		};
		expect(() => planDeploy(old, single)).toThrow(/binding DB.*rename it to DB_0, keeping its database_name/);
		expect(() => checkShards(old)).toThrow(/docs\/deploying\.md, "Upgrading to shards"/);
	});

	it("accepts a shard declared with no bucket mapped to it yet, and migrates it too", () => {
		const added = {
			...config,
			d1_databases: [...(config.d1_databases ?? []), { binding: "DB_2", database_name: "twin-registry-2" }],
		};
		expect(checkShards(added)).toEqual(["DB_0", "DB_1", "DB_2"]);
		expect(planDeploy(added, deployed).steps).toEqual([
			MIGRATE_0,
			MIGRATE_1,
			DEPLOY,
			["d1", "migrations", "apply", "DB_2", "--remote"],
		]);
	});
});

describe("the account it deploys to", () => {
	const accounts = [
		{ id: "a1", name: "Team" },
		{ id: "b2", name: "Personal" },
	];

	it("is the one named, or the login's only one; several need a name", () => {
		expect(chooseAccount(accounts, "b2")).toBe("b2");
		expect(chooseAccount(accounts.slice(0, 1))).toBe("a1");
		expect(() => chooseAccount(accounts)).toThrow(/CLOUDFLARE_ACCOUNT_ID[\s\S]*a1 {2}Team[\s\S]*b2 {2}Personal/);
	});
});

import { describe, expect, it } from "vitest";
import { readConfig } from "../../../scripts/deploy/config.mjs";
import { chooseAccount, planDeploy, queuesOf } from "../../../scripts/deploy/plan.mjs";

// `npm run deploy`'s decisions against the real wrangler.toml, with the account's answers made
// up: a fresh account, one deployed before, and the cases in between.
const config = readConfig();

const QUEUES = ["twin-webhooks", "twin-webhooks-dlq"];
const SECRETS = ["ADMIN_TOKEN", "WEBHOOK_KEY", "TOKEN_KEY"];
const ORIGIN = "https://twin-registry.example-team.workers.dev";
const MIGRATE = ["d1", "migrations", "apply", "DB", "--remote"];
const DEPLOY = ["deploy", "--var", `PUBLIC_URL:${ORIGIN}`];

const fresh = { queues: [], secrets: null, databases: [], subdomain: "example-team" };
const deployed = { queues: QUEUES, secrets: SECRETS, databases: ["twin-registry"], subdomain: "example-team" };

describe("npm run deploy's plan", () => {
	it("reads what it must create from wrangler.toml, which names no placeholder id", () => {
		expect(queuesOf(config)).toEqual(QUEUES);
		expect(config.secrets?.required).toEqual(SECRETS);
		expect(config.d1_databases).toEqual([expect.not.objectContaining({ database_id: expect.anything() })]);
		expect(config.vars?.PUBLIC_URL).toBe("");
	});

	it("on a fresh account creates the queues, deploys with three new secrets (which creates the database and the bucket), then migrates", () => {
		expect(planDeploy(config, fresh)).toEqual({
			steps: [["queues", "create", "twin-webhooks"], ["queues", "create", "twin-webhooks-dlq"], DEPLOY, MIGRATE],
			secrets: SECRETS,
			origin: ORIGIN,
		});
	});

	it("on an account deployed before migrates first, then deploys the code and nothing else", () => {
		expect(planDeploy(config, deployed)).toEqual({ steps: [MIGRATE, DEPLOY], secrets: [], origin: ORIGIN });
	});

	it("creates only what is missing, and never replaces a secret the Worker has", () => {
		const plan = planDeploy(config, {
			...deployed,
			queues: ["twin-webhooks"],
			secrets: ["ADMIN_TOKEN", "TOKEN_KEY", "OTHER"],
		});
		expect(plan.steps).toEqual([["queues", "create", "twin-webhooks-dlq"], MIGRATE, DEPLOY]);
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

import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The tests' values of the secrets wrangler.toml requires.
const TEST_SECRETS = {
	ADMIN_TOKEN: "test-admin-token-with-at-least-32-characters",
	WEBHOOK_KEY: "test-webhook-key-with-at-least-32-characters",
	TOKEN_KEY: "test-token-key-with-at-least-32-characters!",
};

// "workers" runs inside workerd against the real wrangler.toml bindings: D1 with the real
// migrations, the AccountDO namespace and the queues. "node" runs what needs Node itself
// (checking the API document with a validator that generates code) and the unit tests of
// the modules that need no runtime (test/unit/, mirroring src/). "e2e" runs the service as a
// developer would: `npm start` with `npm run bootstrap`, and /docs in Chromium.
export default defineConfig(async () => {
	const migrations = await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url)));
	return {
		test: {
			projects: [
				{
					plugins: [
						cloudflareTest(() => {
							// wrangler reads the required secrets from .dev.vars or the environment when
							// it starts a runtime, and warns when they are in neither; the bindings
							// below give the tests these values either way.
							for (const [name, value] of Object.entries(TEST_SECRETS)) process.env[name] ??= value;
							return {
								// The source, not the build wrangler.toml names: the tests import src/ too,
								// and must meet the same modules the Worker runs.
								main: "./src/index.ts",
								wrangler: { configPath: "./wrangler.toml" },
								miniflare: {
									// Usage counts reach the account's object half a second after the first of
									// them, not ten: test/usage waits for them.
									bindings: {
										TEST_MIGRATIONS: migrations,
										...TEST_SECRETS,
										PUBLIC_URL: "https://registry.test",
										USAGE_FLUSH_SECONDS: 0.5,
										// A bucket move copies after a fifth of a second, not ten (test/shards/moves.test.ts).
										MOVE_GRACE_SECONDS: 0.2,
									},
								},
							};
						}),
					],
					test: {
						name: "workers",
						// The files a worker runs share one runtime, one after another: workerd starts
						// and the modules load once per worker, not once per file, and the files meet
						// in D1, the objects and the queues. Each test makes its own accounts (and names
						// that other files might read, such as identities resolved across accounts, are
						// its own), so it meets only its own data.
						isolate: false,
						// A runtime per core.
						maxWorkers: "100%",
						// Generous: on a loaded 2-core machine a walk over thousands of twins takes a while.
						testTimeout: 30_000,
						include: ["test/**/*.test.ts"],
						exclude: ["test/node/**", "test/unit/**", "test/e2e/**"],
						setupFiles: ["./test/apply-migrations.ts", "./test/quiet-request-logs.ts", "./test/load-operations.ts"],
						// The webhook receiver, and DuckDB reading the export files (it cannot run in workerd).
						globalSetup: ["./test/webhooks/receiver.ts", "./test/jobs/duckdb-reader.ts"],
					},
				},
				{ test: { name: "node", include: ["test/node/**/*.test.ts", "test/unit/**/*.test.ts"], environment: "node" } },
				// Started by `npm run test:e2e` only: it runs wrangler dev, npm start and Chromium.
				{ test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], environment: "node", fileParallelism: false } },
			],
		},
	};
});

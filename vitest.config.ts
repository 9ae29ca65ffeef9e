import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// "workers" runs inside workerd against the real wrangler.toml bindings: D1 with the real
// migrations, the AccountDO namespace and the queues. "node" runs what needs Node itself
// (checking the API document with a validator that generates code). "e2e" runs the service
// as a developer would: `npm start` with `npm run bootstrap`, and /docs in Chromium.
export default defineConfig(async () => {
	const migrations = await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url)));
	return {
		test: {
			projects: [
				{
					plugins: [
						cloudflareTest({
							wrangler: { configPath: "./wrangler.toml" },
							miniflare: {
								bindings: {
									TEST_MIGRATIONS: migrations,
									ADMIN_TOKEN: "test-admin-token-with-at-least-32-characters",
									WEBHOOK_KEY: "test-webhook-key-with-at-least-32-characters",
									PUBLIC_URL: "https://registry.test",
								},
							},
						}),
					],
					test: {
						name: "workers",
						// Generous: on a loaded 2-core machine a walk over thousands of twins takes a while.
						testTimeout: 30_000,
						include: ["test/**/*.test.ts"],
						exclude: ["test/node/**", "test/e2e/**"],
						setupFiles: ["./test/apply-migrations.ts"],
						globalSetup: ["./test/webhooks/receiver.ts"],
					},
				},
				{ test: { name: "node", include: ["test/node/**/*.test.ts"], environment: "node" } },
				// Started by `npm run test:e2e` only: it runs wrangler dev, npm start and Chromium.
				{ test: { name: "e2e", include: ["test/e2e/**/*.test.ts"], environment: "node", fileParallelism: false } },
			],
		},
	};
});

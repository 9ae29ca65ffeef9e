import { fileURLToPath } from "node:url";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";

// The tests run inside workerd against the real wrangler.toml bindings: D1 with the real
// migrations, the AccountDO namespace and the queues.
export default defineConfig(async () => {
	const migrations = await readD1Migrations(fileURLToPath(new URL("./migrations", import.meta.url)));
	return {
		plugins: [
			cloudflareTest({
				wrangler: { configPath: "./wrangler.toml" },
				miniflare: {
					bindings: {
						TEST_MIGRATIONS: migrations,
						ADMIN_TOKEN: "test-admin-token-with-at-least-32-characters",
					},
				},
			}),
		],
		test: {
			include: ["test/**/*.test.ts"],
			setupFiles: ["./test/apply-migrations.ts"],
			globalSetup: ["./test/webhooks/receiver.ts"],
		},
	};
});

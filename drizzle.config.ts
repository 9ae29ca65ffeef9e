import { defineConfig } from "drizzle-kit";

// Flat SQL files in migrations/ are read by `wrangler d1 migrations apply` and by the tests.
export default defineConfig({
	dialect: "sqlite",
	schema: "./src/db/schema.ts",
	out: "./migrations",
});

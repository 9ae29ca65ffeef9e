import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";

// Setup files may run more than once; only migrations not yet applied are applied, to every
// shard the tests' configuration declares.
await applyD1Migrations(env.DB_0, env.TEST_MIGRATIONS);
await applyD1Migrations(env.DB_1, env.TEST_MIGRATIONS);

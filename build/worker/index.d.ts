// The built Worker (scripts/build/worker.mjs) is what wrangler.toml's `main` names, so the types
// wrangler generates (worker-configuration.d.ts) import the Durable Object classes from here:
// they are the source's.
export * from "../../src/index";
export { default } from "../../src/index";

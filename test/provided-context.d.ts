// What vitest's globalSetup (test/webhooks/receiver.ts and test/jobs/duckdb-reader.ts, on Node)
// provides to the tests (in workerd) through inject(): declared once for both type checks.
declare module "vitest" {
	export interface ProvidedContext {
		receiverPort: number;
		duckdbPort: number;
	}
}
export {};

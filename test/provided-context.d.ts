// What vitest's globalSetup (test/webhooks/receiver.ts, on Node) provides to the tests (in
// workerd) through inject(): declared once for both type checks.
declare module "vitest" {
	export interface ProvidedContext {
		receiverPort: number;
	}
}
export {};

export function freePort(): Promise<number>;
export function portFrom(name: string, env?: Record<string, string | undefined>): Promise<number>;
export function startDevServer(options: {
	port?: number;
	persistTo: string;
	vars?: Record<string, string>;
	inspectorPort?: number;
	/** A Worker entry script to run in place of the product's, bundled by wrangler. */
	entry?: string;
}): Promise<{
	url: string;
	stop: () => void;
}>;

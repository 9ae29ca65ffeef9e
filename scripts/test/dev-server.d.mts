export function freePort(): Promise<number>;
export function portFrom(name: string, env?: Record<string, string | undefined>): Promise<number>;
export function startDevServer(options: {
	port?: number;
	persistTo: string;
	vars?: Record<string, string>;
	inspectorPort?: number;
}): Promise<{
	url: string;
	stop: () => void;
}>;

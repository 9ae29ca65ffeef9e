export function startDevServer(options: { port: number; persistTo: string; vars?: Record<string, string> }): Promise<{
	url: string;
	stop: () => void;
}>;

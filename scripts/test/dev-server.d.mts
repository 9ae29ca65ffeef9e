export function startDevServer(options: { port: number; persistTo: string; vars?: Record<string, string>; inspectorPort?: number }): Promise<{
	url: string;
	stop: () => void;
}>;

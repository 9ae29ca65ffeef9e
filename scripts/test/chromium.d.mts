export const SYSTEM_PATHS: string[];
export const HOW_TO_GET_ONE: string;
export function playwrightPaths(env?: Record<string, string | undefined>): string[];
type Options = {
	env?: Record<string, string | undefined>;
	exists?: (path: string) => boolean;
	cache?: string[];
	isRoot?: boolean;
};
export function findChromium(options?: Options): string | undefined;
export function planChromium(
	options?: Options,
): { action: "use"; path: string } | { action: "skip"; message: string } | { action: "install"; commands: string[][] };

// Which Chromium the browser tests drive: one already on this machine, never one installed
// behind the user's back. In order: CHROMIUM_PATH, the usual system paths, then Playwright's
// own download cache. planChromium() decides without touching anything, so that a test can
// read what ensure-chromium.mjs would do.
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

export const SYSTEM_PATHS = [
	"/usr/bin/chromium",
	"/usr/bin/chromium-browser",
	"/snap/bin/chromium",
	"/usr/bin/google-chrome",
	"/usr/bin/google-chrome-stable",
];

// The executables Playwright's `install chromium` leaves in its cache, newest first.
export function playwrightPaths(env = process.env) {
	const cache = env.PLAYWRIGHT_BROWSERS_PATH || join(homedir(), ".cache", "ms-playwright");
	let names = [];
	try {
		names = readdirSync(cache).filter((name) => /^chromium(_headless_shell)?-\d+$/.test(name));
	} catch {
		return [];
	}
	const revision = (name) => Number(name.split("-").at(-1));
	return names
		.sort((a, b) => revision(b) - revision(a))
		.flatMap((name) => [
			join(cache, name, "chrome-linux", "chrome"),
			join(cache, name, "chrome-linux64", "chrome"),
			join(cache, name, "chrome-linux", "headless_shell"),
		]);
}

export const HOW_TO_GET_ONE = [
	"To run them, give them a Chromium:",
	"  CHROMIUM_PATH=/path/to/chromium npm run test:e2e",
	"  or install one yourself: sudo apt-get install chromium (Debian, Ubuntu), or npx playwright-core install chromium",
	"  (INSTALL_CHROMIUM=1 lets npm run test:e2e apt-get install Debian's chromium itself, as CI does; it needs root.)",
].join("\n");

// The browser to use, or undefined.
export function findChromium({ env = process.env, exists = existsSync, cache = playwrightPaths(env) } = {}) {
	if (env.CHROMIUM_PATH) return exists(env.CHROMIUM_PATH) ? env.CHROMIUM_PATH : undefined;
	return [...SYSTEM_PATHS, ...cache].find((path) => exists(path));
}

// What ensure-chromium.mjs does: use the browser found; install Debian's chromium only when
// INSTALL_CHROMIUM=1 asks for it and this machine can (root with apt-get); else skip.
export function planChromium({
	env = process.env,
	exists = existsSync,
	cache = playwrightPaths(env),
	isRoot = process.getuid?.() === 0,
} = {}) {
	const found = findChromium({ env, exists, cache });
	if (found) return { action: "use", path: found };
	const missing = env.CHROMIUM_PATH
		? `CHROMIUM_PATH=${env.CHROMIUM_PATH} does not exist`
		: "no Chromium found (CHROMIUM_PATH, the system paths, Playwright's cache)";
	if (env.INSTALL_CHROMIUM !== "1")
		return { action: "skip", message: `${missing}: the browser tests will skip.\n${HOW_TO_GET_ONE}` };
	if (!isRoot || !exists("/usr/bin/apt-get"))
		return {
			action: "skip",
			message: `${missing}, and INSTALL_CHROMIUM=1 needs root and apt-get: the browser tests will skip.`,
		};
	return {
		action: "install",
		commands: [
			["apt-get", "update", "-qq"],
			["apt-get", "install", "-y", "-qq", "chromium"],
		],
	};
}

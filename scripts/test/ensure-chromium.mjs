// Run by `npm run test:e2e` before its tests: says which Chromium the browser tests will drive,
// or why they will skip and how to give them one. It installs nothing unless INSTALL_CHROMIUM=1
// asks for it (CI does): then, as root, Debian's chromium through apt-get.
import { execFileSync } from "node:child_process";
import { parseCli } from "../cli.mjs";
import { planChromium } from "./chromium.mjs";

parseCli({
	usage: `
usage: node scripts/test/ensure-chromium.mjs     (run by npm run test:e2e)

Finds the Chromium the browser tests drive: CHROMIUM_PATH, else /usr/bin/chromium and the other
usual system paths, else Playwright's download cache. Without one the browser tests skip. It
never installs anything unless INSTALL_CHROMIUM=1: then, as root, apt-get installs Debian's
chromium.

  -h, --help    this text
`,
});

const plan = planChromium();
if (plan.action === "use") {
	console.log(`The browser tests drive ${plan.path}.`);
} else if (plan.action === "skip") {
	console.warn(plan.message);
} else {
	console.log("INSTALL_CHROMIUM=1: installing Debian's chromium for the browser tests...");
	const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
	try {
		for (const [command, ...args] of plan.commands) execFileSync(command, args, { stdio: "inherit", env });
	} catch {
		console.warn("Installing chromium failed: the browser tests will skip.");
	}
}

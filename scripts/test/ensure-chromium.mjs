// The browser test drives Debian's chromium. Installs it where it is missing and this
// machine can (root with apt-get); otherwise says so, and the browser test skips.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";

export const CHROMIUM = "/usr/bin/chromium";

if (!existsSync(CHROMIUM)) {
	const canInstall = process.getuid?.() === 0 && existsSync("/usr/bin/apt-get");
	if (!canInstall) {
		console.warn(`${CHROMIUM} is missing and cannot be installed here (needs root and apt-get): the browser test will skip.`);
	} else {
		console.log("Installing Debian's chromium for the browser test...");
		const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
		try {
			execFileSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
			execFileSync("apt-get", ["install", "-y", "-qq", "chromium"], { stdio: "inherit", env });
		} catch {
			console.warn("Installing chromium failed: the browser test will skip.");
		}
	}
}

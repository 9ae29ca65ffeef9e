import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startDevServer } from "../../scripts/test/dev-server.mjs";

const CHROMIUM = "/usr/bin/chromium";
const available = existsSync(CHROMIUM);
if (!available) console.warn(`Skipping the browser test: ${CHROMIUM} is not installed (npm run test:e2e installs it where it can).`);

// The flags keep a headless Chromium off the network it would otherwise try to reach.
const FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];

describe.skipIf(!available)("the API reference page in a real browser", () => {
	let server: { url: string; stop: () => void };
	let browser: BrowserContext;
	let state: string;

	beforeAll(async () => {
		state = mkdtempSync(join(tmpdir(), "twin-registry-browser-"));
		server = await startDevServer({ port: 8798, persistTo: state });
		// A fresh, empty profile for every run.
		browser = await chromium.launchPersistentContext(join(state, "profile"), { executablePath: CHROMIUM, args: FLAGS });
	}, 120_000);

	afterAll(async () => {
		await browser?.close();
		server?.stop();
		rmSync(state, { recursive: true, force: true });
	});

	it("renders /docs from wrangler dev with the four core operations", async () => {
		const page = await browser.newPage();
		const failed: string[] = [];
		page.on("requestfailed", (request) => failed.push(request.url()));
		await page.goto(`${server.url}/docs`);
		for (const operation of ["delete_user_secret", "scan_twins", "create_user_role", "webhook_subscribe"]) {
			await page.getByText(operation, { exact: true }).first().waitFor({ state: "visible", timeout: 20_000 });
		}
		expect(await page.title()).toBe("Twin Registry API");
		// Left for a person to look at; .wrangler/ is not tracked.
		await page.screenshot({ path: ".wrangler/docs.png" });
		expect(failed).toEqual([]);
	}, 60_000);
});

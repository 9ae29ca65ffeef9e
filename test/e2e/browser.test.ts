import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BrowserContext, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { exchangeToken } from "../../client/src/index";
import { startIdentityProvider } from "../../scripts/dev/identity-provider.mjs";
import { findChromium, HOW_TO_GET_ONE } from "../../scripts/test/chromium.mjs";
import { portFrom, startDevServer } from "../../scripts/test/dev-server.mjs";

// A Chromium already on this machine (scripts/test/chromium.mjs); without one, the tests skip.
const CHROMIUM = findChromium();
const available = CHROMIUM !== undefined;
if (!available) console.warn(`Skipping the browser tests: no Chromium found.\n${HOW_TO_GET_ONE}`);

const ADMIN_TOKEN = "an-admin-token-for-the-browser-test-only";

// The flags keep a headless Chromium off the network it would otherwise try to reach.
const FLAGS = [
	"--no-sandbox",
	"--disable-gpu",
	"--disable-quic",
	"--no-first-run",
	"--disable-background-networking",
	"--disable-component-update",
	"--disable-sync",
];

describe.skipIf(!available)("in a real browser", () => {
	let server: { url: string; stop: () => void };
	let browser: BrowserContext;
	let state: string;

	beforeAll(async () => {
		state = mkdtempSync(join(tmpdir(), "twin-registry-browser-"));
		// CALLBACK_POLICY "any", as `npm start` sets it: the sign-in test's identity provider serves
		// its keys on loopback.
		server = await startDevServer({
			port: await portFrom("E2E_BROWSER_PORT"),
			persistTo: state,
			vars: { ADMIN_TOKEN, CALLBACK_POLICY: "any" },
		});
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

	it("lets a page on another origin call the API with a User Token and read the answer", async () => {
		const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
		const created = await fetch(`${server.url}/admin/accounts`, { method: "POST", headers: admin, body: "{}" });
		const account = (await created.json()) as { account: string; user: string; role: string; secret: string };
		const made = await fetch(`${server.url}/token`, {
			method: "POST",
			headers: { authorization: account.secret },
			body: "{}",
		});
		const { token } = (await made.json()) as { token: string };
		// The page's own origin: another port of the loopback address.
		const pageServer: Server = createServer((_, res) =>
			res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>front-end</title>"),
		);
		await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
		try {
			const origin = `http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`;
			const page = await browser.newPage();
			await page.goto(origin);
			// A POST with a JSON body and an Authorization header needs a preflight first.
			const answer = await page.evaluate(
				async ({ api, token }) => {
					const whoami = await fetch(`${api}/whoami`, { headers: { authorization: `Bearer ${token}` } });
					const twin = await fetch(`${api}/twins`, {
						method: "POST",
						headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
						body: JSON.stringify({ description: { from: "a browser" } }),
					});
					return {
						status: whoami.status,
						body: await whoami.json(),
						trace: whoami.headers.get("x-request-id"),
						created: twin.status,
					};
				},
				{ api: server.url, token },
			);
			expect(answer).toEqual({
				status: 200,
				body: { account: account.account, user: account.user, role: account.role },
				trace: expect.any(String),
				created: 201,
			});
		} finally {
			pageServer.close();
		}
	}, 60_000);

	it("lets a page follow a live stream with EventSource and a stream token, and receive a ledger change", async () => {
		const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
		const created = await fetch(`${server.url}/admin/accounts`, { method: "POST", headers: admin, body: "{}" });
		const account = (await created.json()) as { account: string; secret: string };
		// What a backend hands its front-end: a User Token, never the secret.
		const made = await fetch(`${server.url}/token`, {
			method: "POST",
			headers: { authorization: account.secret },
			body: "{}",
		});
		const { token } = (await made.json()) as { token: string };
		const pageServer: Server = createServer((_, res) =>
			res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>dashboard</title>"),
		);
		await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
		try {
			const page = await browser.newPage();
			await page.goto(`http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`);
			// The page makes its stream token with the User Token, then opens EventSource with it
			// (EventSource cannot set a header), and waits until the stream is open.
			await page.evaluate(
				async ({ api, token }) => {
					const answer = await fetch(`${api}/notifications/stream/tokens`, {
						method: "POST",
						headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
						body: "{}",
					});
					const streamToken = ((await answer.json()) as { token: string }).token;
					const source = new EventSource(
						`${api}/notifications/stream?topics=alerts&access_token=${encodeURIComponent(streamToken)}`,
					);
					(globalThis as unknown as { received: Promise<unknown> }).received = new Promise((resolve) => {
						source.addEventListener("ledger.entry.added", (event) => {
							const message = event as unknown as { lastEventId: string; data: string };
							resolve({ id: message.lastEventId, data: JSON.parse(message.data) });
						});
					});
					await new Promise((resolve, reject) => {
						source.onopen = resolve;
						source.onerror = () => reject(new Error("the stream did not open"));
					});
				},
				{ api: server.url, token },
			);
			const json = { authorization: account.secret, "content-type": "application/json" };
			const twin = (
				(await (await fetch(`${server.url}/twins`, { method: "POST", headers: json, body: "{}" })).json()) as {
					uuid: string;
				}
			).uuid;
			const entries = { pressure: { value: 4.2, publish: { alerts: "true" } } };
			const written = await fetch(`${server.url}/twins/${twin}/ledgers/personal`, {
				method: "POST",
				headers: json,
				body: JSON.stringify({ entries }),
			});
			expect(written.status).toBe(201);
			const received = await page.evaluate(() => (globalThis as unknown as { received: Promise<unknown> }).received);
			expect(received).toMatchObject({
				id: "1",
				data: {
					type: "Notification",
					trigger: "ledger.entry.added",
					twin,
					topic: "alerts",
					account: account.account,
					event: { pressure: { new_value: 4.2, old_value: null } },
				},
			});
		} finally {
			pageServer.close();
		}
	}, 60_000);

	it("lets a driver's page follow his vans live with a User Token, and nothing of the others'", async () => {
		const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
		const created = await fetch(`${server.url}/admin/accounts`, { method: "POST", headers: admin, body: "{}" });
		const account = (await created.json()) as { account: string; secret: string };
		const asAdmin = (method: string, path: string, body: unknown) =>
			fetch(`${server.url}${path}`, {
				method,
				headers: { authorization: account.secret, "content-type": "application/json" },
				body: JSON.stringify(body),
			}).then((r) => r.json() as Promise<Record<string, unknown>>);
		// A Driver role that sees the driver's vans, a driver with his own secret, and two vans.
		const driverRole = await asAdmin("POST", "/roles", {
			name: "Driver",
			statement: { effect: "deny", actions: null },
			rules: { twin: "TWIN.driver == user", entry: null, identity: null },
		});
		const driver = await asAdmin("POST", "/users", { name: "Ann", role: driverRole.uuid });
		const { pin } = await asAdmin("POST", `/users/${driver.uuid}/secrets`, {});
		const redeemed = (await (
			await fetch(`${server.url}/secrets/${account.account}/${pin}`, { method: "POST" })
		).json()) as { secret: string };
		const mine = (await asAdmin("POST", "/twins", { description: { driver: driver.uuid } })).uuid as string;
		const theirs = (await asAdmin("POST", "/twins", { description: { driver: "someone else" } })).uuid as string;
		// His backend hands his page a User Token.
		const made = await fetch(`${server.url}/token`, {
			method: "POST",
			headers: { authorization: redeemed.secret },
			body: "{}",
		});
		const { token } = (await made.json()) as { token: string };
		const pageServer: Server = createServer((_, res) =>
			res.writeHead(200, { "content-type": "text/html" }).end("<!doctype html><title>driver</title>"),
		);
		await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
		try {
			const page = await browser.newPage();
			await page.goto(`http://127.0.0.1:${(pageServer.address() as AddressInfo).port}`);
			await page.evaluate(
				async ({ api, token }) => {
					const answer = await fetch(`${api}/notifications/stream/tokens`, {
						method: "POST",
						headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
						body: "{}",
					});
					const streamToken = ((await answer.json()) as { token: string }).token;
					const source = new EventSource(
						`${api}/notifications/stream?topics=vans&access_token=${encodeURIComponent(streamToken)}`,
					);
					(globalThis as unknown as { received: Promise<unknown> }).received = new Promise((resolve) => {
						source.addEventListener("ledger.entry.added", (event) =>
							resolve(JSON.parse((event as unknown as { data: string }).data)),
						);
					});
					await new Promise((resolve, reject) => {
						source.onopen = resolve;
						source.onerror = () => reject(new Error("the stream did not open"));
					});
				},
				{ api: server.url, token },
			);
			// The other van reports first: the page's first message is still its own van's.
			const entries = { mileage: { value: 20312, publish: { vans: "true" } } };
			expect(await asAdmin("POST", `/twins/${theirs}/ledgers/personal`, { entries })).toHaveProperty("entries");
			expect(await asAdmin("POST", `/twins/${mine}/ledgers/personal`, { entries })).toHaveProperty("entries");
			const received = await page.evaluate(() => (globalThis as unknown as { received: Promise<unknown> }).received);
			expect(received).toMatchObject({
				type: "Notification",
				trigger: "ledger.entry.added",
				twin: mine,
				topic: "vans",
				event: { mileage: { new_value: 20312 } },
			});
		} finally {
			pageServer.close();
		}
	}, 60_000);

	// docs/sign-in.md's example, as a person would try it: the local identity provider, the
	// account trusting it with provisioning, and docs/examples/sign-in.html on its own origin.
	it("signs a person in on the example page with an identity provider's ID token, and streams to the user it made", async () => {
		const provider = await startIdentityProvider({ audience: "twin-registry-browser-test" });
		const admin = { authorization: `Bearer ${ADMIN_TOKEN}`, "content-type": "application/json" };
		const created = await fetch(`${server.url}/admin/accounts`, { method: "POST", headers: admin, body: "{}" });
		const account = (await created.json()) as { account: string; secret: string };
		const asAdmin = async (method: string, path: string, body?: unknown) => {
			const answer = await fetch(`${server.url}${path}`, {
				method,
				headers: { authorization: account.secret, "content-type": "application/json" },
				body: body === undefined ? undefined : JSON.stringify(body),
			});
			return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
		};
		// The role the people who sign in get: who they are, and the live stream.
		const actions = ["exchange_user_token", "who_am_i", "create_stream_token", "stream_notifications"];
		const role = await asAdmin("POST", "/roles", { name: "Signed in", statement: { effect: "allow", actions } });
		expect(role.status, JSON.stringify(role.body)).toBe(201);
		const registered = await asAdmin("POST", "/account/identity-providers", {
			issuer: provider.issuer,
			audiences: [provider.audience],
			jwks_uri: provider.jwksUri,
			provisioning: { role: role.body.uuid },
		});
		expect(registered.status, JSON.stringify(registered.body)).toBe(201);

		const html = readFileSync(new URL("../../docs/examples/sign-in.html", import.meta.url), "utf8");
		const pageServer: Server = createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end(html));
		await new Promise<void>((resolve) => pageServer.listen(0, "127.0.0.1", resolve));
		try {
			const page = await browser.newPage();
			const problems: string[] = [];
			page.on("pageerror", (error) => problems.push(error.message));
			page.on("console", (message) => message.type() === "error" && problems.push(message.text()));
			const query = new URLSearchParams({
				api: server.url,
				account: account.account,
				provider: `${provider.issuer}/token`,
				sub: "alice",
				name: "Alice",
				topics: "alerts",
			});
			await page.goto(`http://127.0.0.1:${(pageServer.address() as AddressInfo).port}/?${query}`);
			await page.getByRole("button", { name: "Sign in" }).click();
			await page.locator('body[data-state="streaming"], body[data-state="failed"]').waitFor({ timeout: 20_000 });
			expect(await page.locator("#status").textContent()).toBe("Following alerts live.");

			// whoami answers the user the first exchange made, named from the token's name claim.
			const whoami = JSON.parse((await page.locator("#whoami").textContent()) ?? "") as {
				account: string;
				user: string;
				role: string;
			};
			expect(whoami).toEqual({ account: account.account, user: expect.any(String), role: role.body.uuid });
			expect(await page.locator("#signed-in").textContent()).toContain("made at this first sign-in");
			expect((await asAdmin("GET", `/users/${whoami.user}`)).body).toMatchObject({
				uuid: whoami.user,
				name: "Alice",
				role: role.body.uuid,
			});

			// The administrator writes an entry that publishes to the page's topic: the page shows it.
			const twin = (await asAdmin("POST", "/twins", {})).body.uuid as string;
			const entries = { pressure: { value: 4.2, publish: { alerts: "true" } } };
			expect((await asAdmin("POST", `/twins/${twin}/ledgers/personal`, { entries })).status).toBe(201);
			const item = page.locator('#events li[data-event="ledger.entry.added"]').first();
			await item.waitFor({ timeout: 20_000 });
			expect(JSON.parse((await item.locator("code").textContent()) ?? "")).toMatchObject({
				type: "Notification",
				trigger: "ledger.entry.added",
				twin,
				topic: "alerts",
				account: account.account,
				event: { pressure: { new_value: 4.2, old_value: null } },
			});
			expect(problems).toEqual([]);

			// The typed client's exchange, for the same person again: the same user, not a new one.
			const again = await exchangeToken({
				baseUrl: server.url,
				account: account.account,
				subjectToken: await provider.token({ sub: "alice", name: "Alice" }),
			});
			expect(again).toMatchObject({ account: account.account, user: whoami.user, provisioned: false });
		} finally {
			pageServer.close();
			await provider.stop();
		}
	}, 60_000);
});

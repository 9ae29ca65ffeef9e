import { describe, expect, it } from "vitest";
import { call, expectError, fetchWithEnv } from "../support/requests";
import { bootstrap, userWith } from "../support/accounts";
import { consume, pathOf, received, receiver, recordingQueue, subscribeRecording } from "../support/webhooks";

const subscribe = (secret: string, body: unknown, policy = "any") =>
	call("POST", "/notifications/webhooks", {
		secret,
		body,
		env: { CALLBACK_POLICY: policy, WEBHOOKS: recordingQueue().binding },
	});

describe("webhook_subscribe", () => {
	it("answers the subscription, pending, with a server_secret only when a client_secret was sent", async () => {
		const admin = await bootstrap();
		const plain = await subscribeRecording(admin, { callback_url: `${receiver()}/r/plain/ok` });
		expect(plain.res.body).toEqual({
			callback_url: `${receiver()}/r/plain/ok`,
			subscription: {
				uuid: expect.any(String),
				topic: "twins",
				account: admin.account,
				status: "pending",
				validity_ts: expect.any(Number),
			},
		});
		const signed = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/signed/ok`,
			client_secret: "abcdefghijklmn-_",
			expires: 60,
		});
		expect(signed.res.body.server_secret).toMatch(/^[A-Za-z0-9_-]{16}$/);
		// The queued job names the subscription, the message and when it was queued; no secret.
		expect(signed.job).toEqual({
			kind: "confirmation",
			subscription: signed.res.body.subscription.uuid,
			message: expect.stringMatching(/^[0-9a-f-]{36}$/),
			since: expect.any(Number),
		});
		expect(signed.url).toMatch(
			/^https:\/\/registry\.test\/notifications\/webhooks\/[0-9a-f-]{36}\?token=[A-Za-z0-9_-]{43}$/,
		);
	});

	it("sets validity_ts to creation time plus expires, 604800 by default", async () => {
		const admin = await bootstrap();
		const before = Date.now() / 1000;
		const byDefault = await subscribeRecording(admin, { callback_url: `${receiver()}/r/d/ok` });
		const short = await subscribeRecording(admin, { callback_url: `${receiver()}/r/s/ok`, expires: 1 });
		expect(byDefault.res.body.subscription.validity_ts - before).toBeGreaterThanOrEqual(604_799);
		expect(byDefault.res.body.subscription.validity_ts - before).toBeLessThanOrEqual(604_801);
		expect(short.res.body.subscription.validity_ts - before).toBeLessThanOrEqual(2);
	});

	it.each([
		["callback_url missing", { topic: "abc" }, "callback_url"],
		[
			"callback_url over 512 characters",
			{ topic: "abc", callback_url: `https://example.com/${"a".repeat(493)}` },
			"callback_url",
		],
		["callback_url not a URL", { topic: "abc", callback_url: "not a url" }, "callback_url"],
		["callback_url not http", { topic: "abc", callback_url: "ftp://example.com/" }, "callback_url"],
		["topic missing", { callback_url: "https://example.com/" }, "topic"],
		["topic too short", { topic: "ab", callback_url: "https://example.com/" }, "topic"],
		["topic too long", { topic: "a".repeat(49), callback_url: "https://example.com/" }, "topic"],
		["topic with a bad character", { topic: "a_b", callback_url: "https://example.com/" }, "topic"],
		[
			"client_secret of 15 characters",
			{ topic: "abc", callback_url: "https://example.com/", client_secret: "a".repeat(15) },
			"client_secret",
		],
		[
			"client_secret of 17 characters",
			{ topic: "abc", callback_url: "https://example.com/", client_secret: "a".repeat(17) },
			"client_secret",
		],
		[
			"client_secret not URL-safe",
			{ topic: "abc", callback_url: "https://example.com/", client_secret: "abcdefghijklmn+/" },
			"client_secret",
		],
		["expires of 0", { topic: "abc", callback_url: "https://example.com/", expires: 0 }, "expires"],
		["expires over 604800", { topic: "abc", callback_url: "https://example.com/", expires: 604_801 }, "expires"],
		["expires not an integer", { topic: "abc", callback_url: "https://example.com/", expires: 1.5 }, "expires"],
		["expires a string", { topic: "abc", callback_url: "https://example.com/", expires: "60" }, "expires"],
		["an unknown field", { topic: "abc", callback_url: "https://example.com/", secret: "x" }, "secret"],
	])("answers 400 for %s", async (_case, body, path) => {
		const admin = await bootstrap();
		const res = await subscribe(admin.secret, body, "public");
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("accepts a 512-character callback_url, 3- and 48-character topics and expires of 604800", async () => {
		const admin = await bootstrap();
		const url = `https://example.com/${"a".repeat(492)}`;
		expect(url).toHaveLength(512);
		for (const body of [
			{ topic: "a-1", callback_url: url },
			{ topic: "A".repeat(48), callback_url: "https://example.com/", expires: 604_800 },
		]) {
			expect((await subscribe(admin.secret, body, "public")).status).toBe(201);
		}
	});

	it("stores and answers the normalised callback URL", async () => {
		const admin = await bootstrap();
		const res = await call("POST", "/notifications/webhooks", {
			secret: admin.secret,
			body: { topic: "abc", callback_url: "HTTPS://Hooks.Example.COM:443/./in" },
			env: { CALLBACK_POLICY: "public", WEBHOOKS: recordingQueue().binding },
		});
		expect(res.status).toBe(201);
		expect(res.body.callback_url).toBe("https://hooks.example.com/in");
	});

	it("is subject to the permission rule", async () => {
		const admin = await bootstrap();
		const reader = await userWith(admin, { effect: "deny", actions: ["webhook_subscribe"] });
		expectError(await subscribe(reader.secret, { topic: "abc", callback_url: "https://example.com/" }), 403, 403101);
	});
});

describe("the confirmation URL", () => {
	it("is built on PUBLIC_URL, whatever origin or Host the request names", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { jobs, binding } = recordingQueue();
		const evil = (path: string, init: RequestInit = {}) =>
			fetchWithEnv(
				new Request(`http://evil.example${path}`, { ...init, headers: { host: "evil.example", ...init.headers } }),
				{ CALLBACK_POLICY: "any", WEBHOOKS: binding },
			);
		const res = await evil("/notifications/webhooks", {
			method: "POST",
			headers: { authorization: admin.secret, "content-type": "application/json" },
			body: JSON.stringify({ topic: "abc", callback_url: `${receiver()}/r/${id}/ok` }),
		});
		expect(res.status).toBe(201);
		await consume(jobs[0]);
		const [message] = (await received(id)).map((d) => JSON.parse(d.body));
		expect(message.confirmation_url).toMatch(/^https:\/\/registry\.test\/notifications\/webhooks\//);
		const confirmed = (await (await evil(pathOf(message.confirmation_url))).json()) as { unsubscribe_url: string };
		expect(confirmed.unsubscribe_url).toBe(message.confirmation_url);
	});

	it.each([
		["PUBLIC_URL", { PUBLIC_URL: "" }],
		["WEBHOOK_KEY", { WEBHOOK_KEY: "" }],
	])("without %s, subscribing answers 500102 and stores nothing", async (_name, changes) => {
		const admin = await bootstrap();
		const { jobs, binding } = recordingQueue();
		const res = await call("POST", "/notifications/webhooks", {
			secret: admin.secret,
			body: { topic: "unconfigured", callback_url: "https://example.com/" },
			env: { CALLBACK_POLICY: "any", WEBHOOKS: binding, ...changes },
		});
		expectError(res, 500, 500102);
		expect(jobs).toHaveLength(0);
		expect((await call("GET", "/notifications/webhooks?topic=unconfigured", { secret: admin.secret })).body).toEqual({
			subscriptions: {},
			cursor: null,
		});
	});
});

describe("the callback URL policy", () => {
	it.each([
		"http://example.com/hook",
		"https://localhost/hook",
		"https://LOCALHOST./hook",
		"https://api.localhost/hook",
		"https://127.0.0.1/hook",
		"https://127.1/hook",
		"https://2130706433/hook",
		"https://0177.0.0.1/hook",
		"https://0x7f.0.0.1/hook",
		"https://10.0.0.8/hook",
		"https://172.16.5.4/hook",
		"https://172.31.255.255/hook",
		"https://192.168.1.1/hook",
		"https://169.254.169.254/latest/meta-data",
		"https://0.0.0.0/hook",
		"https://100.64.0.1/hook",
		"https://[::1]/hook",
		"https://[::]/hook",
		"https://[fc00::1]/hook",
		"https://[fd12:3456::1]/hook",
		"https://[fe80::1]/hook",
		"https://[::ffff:127.0.0.1]/hook",
		"https://[::ffff:10.0.0.1]/hook",
		"https://user:pass@example.com/hook",
		"https://user@example.com/hook",
	])("refuses %s under the public policy", async (callback_url) => {
		const admin = await bootstrap();
		const res = await subscribe(admin.secret, { topic: "abc", callback_url }, "public");
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([{ path: "callback_url", message: expect.any(String) }]);
	});

	it.each(["https://example.com/hook", "https://8.8.8.8/hook", "https://[2606:4700::1111]/hook"])(
		"accepts %s under the public policy",
		async (callback_url) => {
			const admin = await bootstrap();
			expect((await subscribe(admin.secret, { topic: "abc", callback_url }, "public")).status).toBe(201);
		},
	);

	it("accepts a loopback receiver under the any policy, but still no user info", async () => {
		const admin = await bootstrap();
		expect((await subscribe(admin.secret, { topic: "abc", callback_url: `${receiver()}/r/any/ok` })).status).toBe(201);
		expectError(await subscribe(admin.secret, { topic: "abc", callback_url: "http://u:p@127.0.0.1/" }), 400, 400101);
	});
});

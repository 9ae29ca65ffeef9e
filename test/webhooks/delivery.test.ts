import { blake2b } from "@noble/hashes/blake2.js";
import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { failingNetwork } from "../support/faults";
import {
	CLIENT_SECRET,
	consume,
	messagesFor,
	pathOf,
	received,
	receiver,
	storedSubscription,
	subscribeRecording,
} from "../support/webhooks";
import { dbOf } from "../support/shards";

// The documented recipe, written from the README and not from the service's code: the hash is
// keyed BLAKE2b-256 over the compact JSON of the message without `hash`, key = UTF-8 of
// client_secret + server_secret; the signature is Standard Webhooks' HMAC-SHA256.
function expectedHash(body: string, serverSecret: string) {
	const { hash: _, ...message } = JSON.parse(body);
	const digest = blake2b(new TextEncoder().encode(JSON.stringify(message)), {
		key: new TextEncoder().encode(CLIENT_SECRET + serverSecret),
		dkLen: 32,
	});
	return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

async function expectedSignature(headers: Record<string, string>, body: string, serverSecret: string) {
	const key = await crypto.subtle.importKey(
		"raw",
		new TextEncoder().encode(CLIENT_SECRET + serverSecret),
		{ name: "HMAC", hash: "SHA-256" },
		false,
		["sign"],
	);
	const mac = await crypto.subtle.sign(
		"HMAC",
		key,
		new TextEncoder().encode(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`),
	);
	return `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`;
}

describe("the confirmation message", () => {
	it("arrives through the real queue, with a hash and signature that verify, and confirms", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const res = await call("POST", "/notifications/webhooks", {
			secret: admin.secret,
			body: { topic: "twin-events", callback_url: `${receiver()}/r/${id}/ok`, client_secret: CLIENT_SECRET },
			env: { CALLBACK_POLICY: "any" },
		});
		expect(res.status).toBe(201);
		const [delivery] = await messagesFor(id);
		const message = JSON.parse(delivery.body);
		expect(Object.keys(message)).toEqual(["type", "message", "sent_ts", "confirmation_url", "subscription", "hash"]);
		expect(message).toMatchObject({
			type: "Confirmation",
			message: expect.stringMatching(/^[0-9a-f-]{36}$/),
			sent_ts: expect.any(Number),
			subscription: res.body.subscription,
		});
		expect(message.hash).toBe(expectedHash(delivery.body, res.body.server_secret));
		expect(delivery.headers["webhook-id"]).toBe(message.message);
		expect(delivery.headers["webhook-signature"]).toBe(
			await expectedSignature(delivery.headers, delivery.body, res.body.server_secret),
		);
		expect(delivery.headers["content-type"]).toBe("application/json");

		const confirmed = await call("GET", pathOf(message.confirmation_url));
		expect(confirmed.status).toBe(200);
		expect(confirmed.body).toEqual({
			...res.body.subscription,
			status: "confirmed",
			unsubscribe_url: message.confirmation_url,
			refresh_url: message.confirmation_url,
		});
		expect((await call("GET", pathOf(message.confirmation_url))).body).toEqual(confirmed.body);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({ status: "confirmed", attempts: 1 });
	});

	it("has a null hash and no signature header without a client_secret", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/ok` });
		expect(await consume(job)).toMatchObject({ explicitAcks: [expect.any(String)], retryMessages: [] });
		const [delivery] = await received(id);
		expect(JSON.parse(delivery.body).hash).toBeNull();
		expect(delivery.headers["webhook-signature"]).toBeUndefined();
		expect(delivery.headers["webhook-id"]).toBe(job.message);
	});
});

describe("delivery outcomes", () => {
	it("retries 500s on the schedule with the same message uuid, then delivers", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job, url } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${id}/500,500,ok`,
			client_secret: CLIENT_SECRET,
		});
		expect(await consume(job, 1)).toMatchObject({ retryMessages: [expect.anything()], retryDelays: [5] });
		expect(await consume(job, 2)).toMatchObject({ retryMessages: [expect.anything()], retryDelays: [30] });
		expect(await consume(job, 3)).toMatchObject({ retryMessages: [], explicitAcks: [expect.any(String)] });

		const log = await received(id);
		expect(log).toHaveLength(3);
		expect(new Set(log.map((d) => JSON.parse(d.body).message))).toEqual(new Set([job.message]));
		expect(new Set(log.map((d) => d.headers["webhook-id"]))).toEqual(new Set([job.message]));
		for (const d of log) expect(JSON.parse(d.body).hash).toBe(expectedHash(d.body, res.body.server_secret));

		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({
			status: "pending",
			attempts: 3,
			last_outcome: expect.stringContaining("HTTP 200"),
		});
		expect((await call("GET", pathOf(url))).body.status).toBe("confirmed");
	});

	it.each([["404"], ["400"], ["410"]])("treats %s as permanent: acknowledged and marked failed", async (code) => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/${code}`,
		});
		expect(await consume(job)).toMatchObject({ retryMessages: [], explicitAcks: [expect.any(String)] });
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({
			status: "failed",
			attempts: 1,
			failure_reason: expect.stringContaining(`HTTP ${code}`),
		});
	});

	it.each([["408"], ["429"], ["503"]])("retries %s", async (code) => {
		const admin = await bootstrap();
		const { res, job } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/${code}`,
		});
		expect((await consume(job)).retryMessages).toHaveLength(1);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({ status: "pending", attempts: 1 });
	});

	it("does not follow a redirect, and fails the subscription", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/302` });
		expect(await consume(job)).toMatchObject({ retryMessages: [], explicitAcks: [expect.any(String)] });
		expect(await received(id)).toHaveLength(1);
		expect(await received(`${id}-redirected`)).toHaveLength(0);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({
			status: "failed",
			failure_reason: expect.stringContaining("HTTP 302"),
		});
	});

	it("retries a network error", async () => {
		const admin = await bootstrap();
		const callback = `${receiver()}/r/${crypto.randomUUID()}/ok`;
		failingNetwork(callback, "lost");
		const { job } = await subscribeRecording(admin, { callback_url: callback });
		expect((await consume(job)).retryMessages).toHaveLength(1);
	});

	it.each(["confirmed", "unsubscribed", "expired"])("delivers nothing once the subscription is %s", async (state) => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job, url } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/${id}/ok` });
		const uuid = res.body.subscription.uuid;
		if (state === "confirmed") await call("GET", pathOf(url));
		if (state === "unsubscribed") await call("DELETE", pathOf(url));
		if (state === "expired")
			await dbOf(uuid).prepare("UPDATE subscriptions SET validity_ts = 1 WHERE uuid = ?").bind(uuid).run();
		expect((await consume(job)).explicitAcks).toHaveLength(1);
		expect(await received(id)).toHaveLength(0);
		expect(await storedSubscription(uuid)).toMatchObject({ attempts: 0, status: state });
	});
});

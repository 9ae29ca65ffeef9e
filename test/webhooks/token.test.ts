import { blake2b } from "@noble/hashes/blake2.js";
import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { consume, pathOf, received, receiver, storedSubscription, subscribeRecording } from "../support/webhooks";
import { dbOf } from "../support/shards";

const OLD_SECRET = "Client-secret_16";
const NEW_SECRET = "New-client-sec16";

async function signature(key: string, headers: Record<string, string>, body: string) {
	const hmac = await crypto.subtle.importKey(
		"raw",
		new TextEncoder().encode(key),
		{ name: "HMAC", hash: "SHA-256" },
		false,
		["sign"],
	);
	const mac = await crypto.subtle.sign(
		"HMAC",
		hmac,
		new TextEncoder().encode(`${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`),
	);
	return `v1,${btoa(String.fromCharCode(...new Uint8Array(mac)))}`;
}

function hash(key: string, body: string) {
	const { hash: _, ...message } = JSON.parse(body);
	const digest = blake2b(new TextEncoder().encode(JSON.stringify(message)), {
		key: new TextEncoder().encode(key),
		dkLen: 32,
	});
	return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

describe("refresh", () => {
	it("extends the validity only when expires is sent", async () => {
		const admin = await bootstrap();
		const { res, url } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok`, expires: 600 });
		const before = res.body.subscription.validity_ts;
		const plain = await call("PATCH", pathOf(url), { body: {} });
		expect(plain.status).toBe(200);
		expect(plain.body).toEqual({ subscription: res.body.subscription, callback_url: res.body.callback_url });
		const longer = await call("PATCH", pathOf(url), { body: { expires: 3600 } });
		expect(longer.body.subscription.validity_ts - before).toBeGreaterThan(2900);
		expectError(await call("PATCH", pathOf(url), { body: { expires: 0 } }), 400, 400101);
	});

	it("with a new client_secret rotates the key: new first, the old one alongside for 24 h", async () => {
		const admin = await bootstrap();
		const id = crypto.randomUUID();
		const { res, job, url } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${id}/500,ok`,
			client_secret: OLD_SECRET,
		});
		const oldKey = OLD_SECRET + res.body.server_secret;
		await consume(job, 1);
		const rotated = await call("PATCH", pathOf(url), { body: { client_secret: NEW_SECRET } });
		expect(rotated.status).toBe(200);
		expect(rotated.body.server_secret).toMatch(/^[A-Za-z0-9_-]{16}$/);
		expect(rotated.body.subscription.validity_ts).toBe(res.body.subscription.validity_ts);
		const newKey = NEW_SECRET + rotated.body.server_secret;
		await consume(job, 2);

		const [before, after] = await received(id);
		expect(before.headers["webhook-signature"]).toBe(await signature(oldKey, before.headers, before.body));
		expect(JSON.parse(before.body).hash).toBe(hash(oldKey, before.body));
		expect(after.headers["webhook-signature"]).toBe(
			`${await signature(newKey, after.headers, after.body)} ${await signature(oldKey, after.headers, after.body)}`,
		);
		expect(JSON.parse(after.body).hash).toBe(hash(newKey, after.body));

		// A day later only the new key signs.
		await dbOf(res.body.subscription.uuid)
			.prepare("UPDATE subscriptions SET previous_key_until = 1 WHERE uuid = ?")
			.bind(res.body.subscription.uuid)
			.run();
		const id2 = crypto.randomUUID();
		await dbOf(res.body.subscription.uuid)
			.prepare("UPDATE subscriptions SET callback_url = ?, delivered_ts = NULL WHERE uuid = ?")
			.bind(`${receiver()}/r/${id2}/ok`, res.body.subscription.uuid)
			.run();
		await consume(job, 3);
		const [later] = await received(id2);
		expect(later.headers["webhook-signature"]).toBe(await signature(newKey, later.headers, later.body));
	});

	it("keeps the keys sealed: neither secret is stored in the clear", async () => {
		const admin = await bootstrap();
		const { res, url } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/x/ok`,
			client_secret: OLD_SECRET,
		});
		const token = new URL(url).searchParams.get("token") as string;
		const rotated = await call("PATCH", pathOf(url), { body: { client_secret: NEW_SECRET } });
		const stored = JSON.stringify(await storedSubscription(res.body.subscription.uuid));
		for (const secret of [OLD_SECRET, NEW_SECRET, res.body.server_secret, rotated.body.server_secret, token])
			expect(stored).not.toContain(secret);
		const { results } = await dbOf(res.body.subscription.uuid)
			.prepare("SELECT * FROM webhook_deliveries WHERE subscription = ?")
			.bind(res.body.subscription.uuid)
			.all();
		expect(JSON.stringify(results)).not.toContain(token);
	});
});

describe("confirm and unsubscribe", () => {
	it("unsubscribes, after which the token is dead", async () => {
		const admin = await bootstrap();
		const { res, url } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		const gone = await call("DELETE", pathOf(url));
		expect(gone.body).toEqual({ ...res.body.subscription, status: "unsubscribed" });
		for (const method of ["GET", "PATCH", "DELETE"]) expectError(await call(method, pathOf(url)), 404, 404102);
	});

	it("answers 404 for an unknown token or another account's path, and 400 once expired", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const { res, url } = await subscribeRecording(admin, { callback_url: `${receiver()}/r/x/ok` });
		const token = new URL(url).searchParams.get("token");
		expectError(await call("GET", `/notifications/webhooks/${admin.account}?token=wrong`), 404, 404102);
		expectError(await call("GET", `/notifications/webhooks/${other.account}?token=${token}`), 404, 404102);
		expectError(await call("GET", `/notifications/webhooks/${admin.account}`), 400, 400101);

		await dbOf(res.body.subscription.uuid)
			.prepare("UPDATE subscriptions SET validity_ts = 1 WHERE uuid = ?")
			.bind(res.body.subscription.uuid)
			.run();
		expectError(await call("GET", pathOf(url)), 400, 400105);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({ status: "expired" });
		expectError(await call("PATCH", pathOf(url), { body: {} }), 400, 400105);
	});

	it("answers 409 on a failed subscription's token, and confirms nothing", async () => {
		const admin = await bootstrap();
		const { res, job, url } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/${crypto.randomUUID()}/404`,
		});
		await consume(job);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({ status: "failed" });
		expectError(await call("GET", pathOf(url)), 409, 409106);
		expect(await storedSubscription(res.body.subscription.uuid)).toMatchObject({ status: "failed" });
	});
});

import { blake2b } from "@noble/hashes/blake2.js";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries } from "../support/ledgers";
import { CLIENT_SECRET, confirmedSubscription, messagesFor } from "../support/webhooks";

const encoder = new TextEncoder();

// The documented recipe, from the README: keyed BLAKE2b-256 over the compact JSON of the
// message without `hash`, key = UTF-8 of client_secret + server_secret.
function expectedHash(body: string, key: string) {
	const { hash: _, ...message } = JSON.parse(body);
	return Array.from(blake2b(encoder.encode(JSON.stringify(message)), { key: encoder.encode(key), dkLen: 32 }), (b) =>
		b.toString(16).padStart(2, "0"),
	).join("");
}

const whsec = (key: string) => `whsec_${btoa(key)}`;

describe("a notification's hash and signatures", () => {
	it("verify with the receiver's secrets and with the standardwebhooks verifier", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "signed", id, { client_secret: CLIENT_SECRET });
		const key = CLIENT_SECRET + sub.serverSecret;
		await addEntries(admin.secret, twin, { level: { value: { a: [1, "x"] }, publish: { signed: "true" } } });

		const [delivery] = await messagesFor(id);
		const message = JSON.parse(delivery.body);
		expect(message.hash).toBe(expectedHash(delivery.body, key));
		expect(delivery.headers["webhook-id"]).toBe(message.message);
		const verified = new Webhook(whsec(key)).verify(delivery.body, delivery.headers);
		expect(verified).toEqual(message);
		expect(() =>
			new Webhook(whsec(`${CLIENT_SECRET}AAAAAAAAAAAAAAAA`)).verify(delivery.body, delivery.headers),
		).toThrow();
	});

	it("carry the old and the new key's signatures after a rotation", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "rotated", id, { client_secret: CLIENT_SECRET });
		const newClient = "Another-secret16";
		const refreshed = await call("PATCH", new URL(sub.url).pathname + new URL(sub.url).search, {
			body: { client_secret: newClient },
		});
		expect(refreshed.status).toBe(200);
		await addEntries(admin.secret, twin, { level: { value: 1, publish: { rotated: "true" } } });

		const [delivery] = await messagesFor(id);
		const message = JSON.parse(delivery.body);
		// The hash uses the current key; either key's verifier accepts the signature header.
		expect(message.hash).toBe(expectedHash(delivery.body, newClient + refreshed.body.server_secret));
		expect(delivery.headers["webhook-signature"].split(" ")).toHaveLength(2);
		expect(
			new Webhook(whsec(newClient + refreshed.body.server_secret)).verify(delivery.body, delivery.headers),
		).toEqual(message);
		expect(new Webhook(whsec(CLIENT_SECRET + sub.serverSecret)).verify(delivery.body, delivery.headers)).toEqual(
			message,
		);
	});
});

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AccountDO } from "../../src/objects";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { clockPast, until } from "../support/waiting";
import { loggedErrors } from "../support/faults";
import { objectEnv, restartAccountObject, fireAccountAlarm } from "../support/objects";
import { bodies, confirmedSubscription, messagesFor, outboxOf, received } from "../support/webhooks";
import { openSse, streamPath } from "../streams/helpers";
import { putStickers, stickerPath } from "./helpers";
import { logLines } from "../log/helpers";
import { usageOf, usageTotal } from "../usage/helpers";
import { dbOf } from "../support/shards";

const everything = { on_put: "stickers", on_remove: "stickers", on_expire: "stickers" };

// The triggers of the messages published to a subscription, in the order they were written.
const triggers = async (subscription: string) => (await outboxOf(subscription)).map((row) => row.trigger);

describe("sticker notifications", () => {
	it("sends sticker.put and sticker.removed to the topics of their events, as ledger events are sent", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "stickers", id);
		const put = await putStickers(admin.secret, twin, {
			red: { note: "inspect this", recipients: [admin.user], publish: everything },
		});

		const [message] = bodies(await messagesFor(id, 1));
		expect(Object.keys(message)).toEqual([
			"type",
			"trigger",
			"message",
			"twin",
			"event",
			"sent_ts",
			"subscription",
			"hash",
		]);
		expect(message).toMatchObject({
			type: "Notification",
			trigger: "sticker.put",
			twin,
			event: { color: "red", note: "inspect this", validity_ts: put.red.validity_ts, created_ts: put.red.created_ts },
			subscription: { uuid: sub.uuid, topic: "stickers", account: admin.account },
		});
		expect(Object.keys(message.event)).toEqual(["color", "note", "validity_ts", "created_ts"]);

		expect((await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret })).status).toBe(200);
		const second = bodies(await messagesFor(id, 2))[1];
		expect(second).toMatchObject({ trigger: "sticker.removed", event: { color: "red", note: "inspect this" } });
		expect(second.message).not.toBe(message.message);
	});

	it("publishes nothing without a topic for the event: being a recipient notifies nobody", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "stickers", crypto.randomUUID());
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], publish: { on_remove: "stickers" } },
			blue: { recipients: [admin.user] },
		});
		expect(await triggers(sub.uuid)).toEqual([]);
		await call("DELETE", stickerPath(twin, "blue"), { secret: admin.secret });
		expect(await triggers(sub.uuid)).toEqual([]);
		await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret });
		expect(await triggers(sub.uuid)).toEqual(["sticker.removed"]);
	});

	it("sends one message per sticker, and reaches live streams too", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "stickers", crypto.randomUUID());
		const stream = await openSse(streamPath("stickers"), { secret: admin.secret });
		const put = await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], publish: { on_put: ["stickers", "other-topic"] } },
			blue: { note: "b", recipients: [admin.user], publish: { on_put: "stickers" } },
		});
		const rows = await outboxOf(sub.uuid);
		expect(rows.map((row) => JSON.parse(row.event as string).color).sort()).toEqual(["blue", "red"]);
		const events = [await stream.event(), await stream.event()];
		expect(events.map((e) => e.event)).toEqual(["sticker.put", "sticker.put"]);
		expect(events.map((e) => e.data.event).sort((a, b) => a.color.localeCompare(b.color))).toEqual([
			{ color: "blue", note: "b", validity_ts: put.blue.validity_ts, created_ts: put.blue.created_ts },
			{ color: "red", note: null, validity_ts: put.red.validity_ts, created_ts: put.red.created_ts },
		]);
		expect(events[0].data).toMatchObject({
			type: "Notification",
			trigger: "sticker.put",
			twin,
			topic: "stickers",
			account: admin.account,
		});
	});
});

describe("sticker expiry", () => {
	it("ends a sticker at its validity_ts: absent at once, then one sticker.expired message and one log line", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "stickers", id);
		const validity = Date.now() / 1000 + 1;
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], validity_ts: validity, publish: everything },
		});
		await messagesFor(id, 1);
		await clockPast(validity);
		// Past its time the sticker is absent to every read and write, swept or not.
		expectError(await call("GET", stickerPath(twin, "red"), { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret }), 404, 404102);
		expect((await call("GET", stickerPath(twin), { secret: admin.secret })).body).toEqual({ accounts: {} });

		const expired = bodies(await messagesFor(id, 2))[1];
		expect(expired).toMatchObject({ trigger: "sticker.expired", twin, event: { color: "red", validity_ts: validity } });
		// The alarm run again (a retry) finds nothing left to end.
		await fireAccountAlarm(admin.account);
		expect(await triggers(sub.uuid)).toEqual(["sticker.put", "sticker.expired"]);
		const lines = await logLines(admin.secret);
		expect(lines).toHaveLength(1);
		expect(lines[0]).toMatch(
			new RegExp(`^Sticker expired: twin=\\[${twin}\\], color=\\[red\\], ts=\\[\\d+(\\.\\d{1,3})?\\]\\.$`),
		);
	});

	it("ends a sticker after the account's object restarted between the put and the expiry", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "stickers", crypto.randomUUID());
		const validity = Date.now() / 1000 + 1;
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], validity_ts: validity, publish: { on_expire: "stickers" } },
		});
		await restartAccountObject(admin.account);
		// The alarm set before the restart fires in the new instance.
		await until(
			() => triggers(sub.uuid),
			(t) => t.length > 0,
			"the expiry after a restart",
		);
		expect(await triggers(sub.uuid)).toEqual(["sticker.expired"]);
		expect(await logLines(admin.secret)).toHaveLength(1);
	});

	it("expires an unswept color before a put over it, as the alarm would", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "stickers", crypto.randomUUID());
		const validity = Date.now() / 1000 + 1;
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], validity_ts: validity, publish: { on_expire: "stickers" } },
		});
		// Its alarm moved away, as if it were late: the put meets the expired row.
		await dbOf(twin)
			.prepare("UPDATE stickers SET validity_ts = ? WHERE twin = ? AND color = 'red'")
			.bind(Date.now() / 1000 - 1, twin)
			.run();
		const again = await putStickers(admin.secret, twin, { red: { note: "again", recipients: [admin.user] } });
		expect(again.red.note).toBe("again");
		expect(await triggers(sub.uuid)).toEqual(["sticker.expired"]);
		expect(await logLines(admin.secret)).toHaveLength(1);
		await fireAccountAlarm(admin.account);
		expect(await triggers(sub.uuid)).toEqual(["sticker.expired"]);
		expect((await call("GET", stickerPath(twin, "red"), { secret: admin.secret })).body.note).toBe("again");
	});

	it("ends each sticker once when removes race its expiry: removed or expired, never both", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "stickers", crypto.randomUUID());
		const validity = Date.now() / 1000 + 1.5;
		const colors = Array.from({ length: 8 }, (_, i) => `color-${i}`);
		await putStickers(
			admin.secret,
			twin,
			Object.fromEntries(
				colors.map((color) => [color, { recipients: [admin.user], validity_ts: validity, publish: everything }]),
			),
		);
		await until(
			() => triggers(sub.uuid),
			(t) => t.length === colors.length,
			"the put messages",
		);
		// Removes sent around the validity, one every 20 ms, while the alarm fires.
		await clockPast(validity - 0.08);
		const removes = await Promise.all(
			colors.map(async (color, i) => {
				await new Promise((resolve) => setTimeout(resolve, i * 20));
				return [color, (await call("DELETE", stickerPath(twin, color), { secret: admin.secret })).status] as const;
			}),
		);
		await fireAccountAlarm(admin.account);
		await until(
			() => triggers(sub.uuid),
			(t) => t.length === 2 * colors.length,
			"every sticker's end",
		);
		const ends = (await outboxOf(sub.uuid)).filter((row) => row.trigger !== "sticker.put");
		for (const [color, status] of removes) {
			const mine = ends.filter((row) => JSON.parse(row.event as string).color === color).map((row) => row.trigger);
			expect(mine).toEqual([status === 200 ? "sticker.removed" : "sticker.expired"]);
			expect([200, 404]).toContain(status);
		}
		expect(await logLines(admin.secret)).toHaveLength(ends.filter((row) => row.trigger === "sticker.expired").length);
		expect(await received(crypto.randomUUID())).toEqual([]);
	});

	it("keeps the alarm close when the queue refuses an expiry's messages, and sends them later", async () => {
		const logged = loggedErrors();
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "stickers", id);
		const validity = Date.now() / 1000 + 1;
		// Blue expires in an hour: the alarm after red's expiry must not wait for it.
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user], validity_ts: validity, publish: { on_expire: "stickers" } },
			blue: { recipients: [admin.user], validity_ts: validity + 3600 },
		});
		await objectEnv(admin.account, {
			WEBHOOKS: {
				sendBatch: async () => {
					throw new Error("the queue is down");
				},
			},
		});
		// One alarm run, by the test: the platform's own, due at red's validity, is moved away.
		const stub = env.ACCOUNTS.getByName(admin.account);
		await runInDurableObject(stub, (_instance: AccountDO, state) => state.storage.setAlarm(Date.now() + 86_400_000));
		await clockPast(validity);
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		const [row] = await outboxOf(sub.uuid);
		expect(row).toMatchObject({ trigger: "sticker.expired", queued_ts: null });
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("the queue is down"));
		// Not blue's expiry: the drain's grace.
		const alarm = await runInDurableObject(stub, (_instance: AccountDO, state) => state.storage.getAlarm());
		expect(alarm).not.toBeNull();
		expect(alarm as number).toBeLessThanOrEqual(Date.now() + 31_000);
		await objectEnv(admin.account, { WEBHOOKS: env.WEBHOOKS });
		await fireAccountAlarm(admin.account);
		expect(bodies(await messagesFor(id, 1))[0]).toMatchObject({ trigger: "sticker.expired", message: row.message });
	});

	it("counts stickers put, removed and expired in the account's usage, and the putting user's", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const validity = Date.now() / 1000 + 1;
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user] },
			blue: { recipients: [admin.user], validity_ts: validity },
		});
		expect((await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret })).status).toBe(200);
		// The alarm that ends blue comes on its own: its log line says it has.
		await until(
			() => logLines(admin.secret),
			(lines) => lines.length === 1,
			"blue's expiry",
		);
		const account = usageTotal(await usageOf(admin.secret, "/usage"));
		expect(account).toMatchObject({ stickers_put: 2, stickers_removed: 1, stickers_expired: 1 });
		const user = usageTotal(await usageOf(admin.secret, `/usage/${admin.user}`));
		expect(user).toMatchObject({ stickers_put: 2, stickers_removed: 1, stickers_expired: 0 });
	});
});

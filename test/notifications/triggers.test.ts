import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { bodies, confirmedSubscription, messagesFor, outboxOf, received } from "../support/webhooks";

const always = { readings: "true" };

describe("notifications of ledger entries", () => {
	it("sends added, updated and deleted, each with its event, in the contract's key order", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "readings", id);

		await addEntries(admin.secret, twin, { temp: { value: 20, publish: always } });
		const [added] = bodies(await messagesFor(id, 1));
		expect(Object.keys(added)).toEqual([
			"type",
			"trigger",
			"message",
			"twin",
			"event",
			"sent_ts",
			"subscription",
			"hash",
		]);
		expect(added).toMatchObject({
			type: "Notification",
			trigger: "ledger.entry.added",
			twin,
			event: { temp: { new_value: 20, old_value: null, changed_ts: expect.any(Number) } },
			subscription: { uuid: sub.uuid, topic: "readings", account: admin.account, status: "confirmed" },
			hash: null,
		});

		const updated = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { temp: { value: 21 } } },
		});
		expect(updated.status).toBe(200);
		const second = bodies(await messagesFor(id, 2))[1];
		expect(second).toMatchObject({
			trigger: "ledger.entry.updated",
			event: { temp: { new_value: 21, old_value: 20 } },
		});

		const deleted = await call("DELETE", ledger(twin, "personal", "?entries=temp"), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		const third = bodies(await messagesFor(id, 3))[2];
		expect(third).toMatchObject({
			trigger: "ledger.entry.deleted",
			event: { temp: { new_value: null, old_value: 21 } },
		});
		expect(new Set([added.message, second.message, third.message]).size).toBe(3);
	});

	it("publishes nothing for an unchanged value or a property-only change", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "readings", id);
		await addEntries(admin.secret, twin, { temp: { value: 20, publish: always } });
		await messagesFor(id, 1);

		const same = await call("PATCH", ledger(twin), {
			secret: admin.secret,
			body: { entries: { temp: { value: 20 } } },
		});
		const property = await call("PATCH", ledger(twin), {
			secret: admin.secret,
			body: { entries: { temp: { visibility: "true", history: "1D" } } },
		});
		expect([same.status, property.status]).toEqual([200, 200]);
		expect(await outboxOf(sub.uuid)).toHaveLength(1);

		// A later value change arrives as the second message: nothing came in between.
		await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { temp: { value: 22 } } } });
		const log = bodies(await messagesFor(id, 2));
		expect(log.map((m) => m.trigger)).toEqual(["ledger.entry.added", "ledger.entry.updated"]);
		expect(log[1].event.temp).toMatchObject({ new_value: 22, old_value: 20 });
	});

	it("evaluates the publish rule with trigger, old_value, the entry and the writer", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "alarms", id);
		const publish = {
			alarms: `trigger == 'ledger.entry.updated' and entry_value > 100 and old_value <= 100 and user == '${admin.user}'`,
		};
		await addEntries(admin.secret, twin, {
			temp: { value: 150, publish },
			quiet: { value: 1, publish: { alarms: "false" } },
		});
		for (const value of [50, 120, 130]) {
			const res = await call("PATCH", ledger(twin), {
				secret: admin.secret,
				body: { entries: { temp: { value }, quiet: { value } } },
			});
			expect(res.status).toBe(200);
		}
		// Only 50 -> 120 crosses the threshold; `quiet` never publishes.
		const rows = await outboxOf(sub.uuid);
		expect(rows).toHaveLength(1);
		expect(JSON.parse(rows[0].event as string)).toEqual({
			temp: { new_value: 120, old_value: 50, changed_ts: expect.any(Number) },
		});
		const [only] = bodies(await messagesFor(id, 1));
		expect(only.event).toEqual(JSON.parse(rows[0].event as string));
		expect(await received(id)).toHaveLength(1);
	});

	it("puts every entry one request triggered into one message per topic", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const [a, b] = [crypto.randomUUID(), crypto.randomUUID()];
		await confirmedSubscription(admin, "topic-a", a);
		await confirmedSubscription(admin, "topic-b", b);
		await addEntries(admin.secret, twin, {
			x: { value: 1, publish: { "topic-a": "true", "topic-b": "true" } },
			y: { value: 2, publish: { "topic-a": "true" } },
		});
		const [toA] = bodies(await messagesFor(a));
		const [toB] = bodies(await messagesFor(b));
		expect(Object.keys(toA.event).sort()).toEqual(["x", "y"]);
		expect(Object.keys(toB.event)).toEqual(["x"]);
	});

	it("reads a publish rule with its writer's sight, and lets no writer confined by an entry rule write one that reads LEDGER", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(admin, "probe-topic", id);
		await addEntries(admin.secret, twin, { secret: { value: "abc" }, open: { value: 1 } });
		const weak = await userWithRules(admin, { entry: "entry_name != 'secret'" });
		await addEntries(weak.secret, twin, { probe: { value: 0 } });
		let value = 0;
		const write = (secret: string, publish?: Record<string, string>) =>
			call("PATCH", ledger(twin), {
				secret,
				body: { entries: { probe: { value: ++value, ...(publish && { publish }) } } },
			});

		// The rule would fire on later writes, read with their writers' sight, for the topic's
		// subscribers: a writer that cannot see every entry may not write one reading LEDGER.
		const refused = await write(weak.secret, { "probe-topic": "LEDGER.secret == 'abc' or 'secret' in LEDGER" });
		expectError(refused, 403, 403102);
		expect(await outboxOf(sub.uuid)).toHaveLength(0);

		// The administrator's rule reads each write with its writer's sight: the entry hidden from
		// the weak writer reads null for its writes, the entries it sees as they are.
		expect((await write(admin.secret, { "probe-topic": "LEDGER.secret == null and LEDGER.open == 1" })).status).toBe(
			200,
		);
		expect(await outboxOf(sub.uuid)).toHaveLength(0);
		expect((await write(weak.secret)).status).toBe(200);
		expect(await outboxOf(sub.uuid)).toHaveLength(1);
		// On delete too.
		expect((await call("DELETE", ledger(twin, "personal", "?entries=probe"), { secret: weak.secret })).status).toBe(
			200,
		);
		expect(await outboxOf(sub.uuid)).toHaveLength(2);
	});

	it("refuses, naming it, a write whose publish rule needs more work than one request may do", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const publish = { readings: "entry_value !~ '(?:[ab][ab]?){999}[cd]'" };
		const res = await call("POST", ledger(twin), {
			secret: admin.secret,
			body: { entries: { big: { value: "ab".repeat(30_000), publish } } },
		});
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([
			{ path: "entries.big.publish.readings", message: expect.stringContaining("more work") },
		]);
		expect((await call("GET", ledger(twin), { secret: admin.secret })).body).toEqual({ entries: {} });
	});
});

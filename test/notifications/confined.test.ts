import { env } from "cloudflare:workers";
import { Webhook } from "standardwebhooks";
import { database } from "../../src/db/client";
import { drainOutbox, homesIn } from "../../src/notifications/outbox-drain";
import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap, member, role } from "../support/accounts";
import { dbOf } from "../support/shards";
import { newTwin } from "../support/twins";
import {
	bodies,
	CLIENT_SECRET,
	confirmedSubscription,
	messagesFor,
	outboxOf,
	received,
	storedSubscription,
} from "../support/webhooks";
import { publishEntries } from "../streams/helpers";

// Webhook subscriptions of a subscriber whose role confines it (docs/notifications.md): each
// message reaches it only as it could read it, filtered when the account's object hands it to
// the queue; one filtered to nothing is deleted unsent.

const whsec = (key: string) => `whsec_${btoa(key)}`;

async function fleet(entry: string | null = null) {
	const admin = await bootstrap();
	const driverRole = await role(
		admin,
		{ effect: "deny", actions: null },
		{ twin: "TWIN.driver == user", entry },
		"Driver",
	);
	const ann = await member(admin, driverRole);
	const annsVan = await newTwin(admin.secret, { driver: ann.user });
	const bobsVan = await newTwin(admin.secret, { driver: "bob" });
	return { admin, ann, annsVan, bobsVan };
}

// A write of `entries` on `van`, each published to `vans`.
const report = (secret: string, van: string, entries: Record<string, unknown>) =>
	publishEntries(secret, van, entries, ["vans"]);

describe("a confined subscriber's webhook", () => {
	it("gets its vans' messages only, with the entries it sees, and nothing is kept for the others", async () => {
		const { admin, ann, annsVan, bobsVan } = await fleet("entry_name !~ '^cost'");
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(ann, "vans", id, { client_secret: CLIENT_SECRET });
		await report(admin.secret, bobsVan, { mileage: 1 });
		await report(admin.secret, annsVan, { cost: 7 });
		await report(admin.secret, annsVan, { mileage: 2, cost_toll: 8 });
		const [delivery] = await messagesFor(id, 1);
		const message = JSON.parse(delivery.body);
		expect(message).toMatchObject({ twin: annsVan, event: { mileage: { new_value: 2 } } });
		expect(Object.keys(message.event)).toEqual(["mileage"]);
		// Signed over what it was sent.
		expect(new Webhook(whsec(CLIENT_SECRET + sub.serverSecret)).verify(delivery.body, delivery.headers)).toEqual(
			message,
		);
		// The messages filtered to nothing were deleted unsent: one row, one delivery.
		expect(await outboxOf(sub.uuid)).toHaveLength(1);
		const deliveries = await call("GET", `/notifications/webhooks/subscriptions/${sub.uuid}/deliveries`, {
			secret: ann.secret,
		});
		expect(deliveries.status).toBe(200);
		expect(bodies(await received(id))).toHaveLength(1);
		// The writes' sights go once every row that named them is handed over.
		const sights = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM outbox_sights WHERE account = ?")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(sights?.n).toBe(0);
	});

	it("reads DICT as the subscribing request sent it", async () => {
		const admin = await bootstrap();
		const siteRole = await role(
			admin,
			{ effect: "deny", actions: null },
			{ twin: "TWIN.site == DICT.site" },
			"On site",
		);
		const dave = await member(admin, siteRole);
		const here = await newTwin(admin.secret, { site: "dock-4" });
		const there = await newTwin(admin.secret, { site: "dock-9" });
		const id = crypto.randomUUID();
		const sub = await confirmedSubscription(
			dave,
			"vans",
			id,
			{},
			{ "x-trustedtwin": btoa(JSON.stringify({ site: "dock-4" })) },
		);
		expect((await storedSubscription(sub.uuid))?.dict).toBe(JSON.stringify({ site: "dock-4" }));
		await report(admin.secret, there, { n: 1 });
		await report(admin.secret, here, { n: 2 });
		const log = bodies(await messagesFor(id, 1));
		expect(log.map((m) => m.twin)).toEqual([here]);
	});

	it("ends with its user: deleting a confined user unsubscribes it, another user's stays", async () => {
		const { admin, ann } = await fleet();
		const sub = await confirmedSubscription(ann, "vans", crypto.randomUUID());
		const own = await confirmedSubscription(admin, "vans", crypto.randomUUID());
		expect((await call("DELETE", `/users/${ann.user}`, { secret: admin.secret })).status).toBe(200);
		expect((await storedSubscription(sub.uuid))?.status).toBe("unsubscribed");
		expect((await storedSubscription(own.uuid))?.status).toBe("confirmed");
	});

	it("are filtered within a turn's work a drain page: the rest waits for the next turn, untouched, and nothing is lost", async () => {
		// Fourteen subscribers whose rule first spends some 900,000 units on a long description,
		// each its own group (the rule reads `user`): past ten budgets the page's rest waits.
		const admin = await bootstrap();
		const heavy = Array.from({ length: 3 }, () => `(${Array(10).fill("TWIN.s < 'a'").join(" or ")})`).join(" or ");
		const driverRole = await role(
			admin,
			{ effect: "deny", actions: null },
			{ twin: `${heavy} or TWIN.driver != user` },
			"Driver",
		);
		const subscriptions = [];
		for (let i = 0; i < 14; i++)
			subscriptions.push(
				(await confirmedSubscription(await member(admin, driverRole), "vans", crypto.randomUUID())).uuid,
			);
		// One write's messages, as its batch leaves them: the sight, and a row per subscription.
		const twin = {
			uuid: crypto.randomUUID(),
			owner: admin.account,
			status: "alive",
			description: { driver: "nobody", s: "b".repeat(30_000) },
		};
		const after = [
			{ name: "n", value: 1, visibility: null, entry_created_ts: 1, entry_updated_ts: 1, value_changed_ts: 1 },
		];
		const sight = crypto.randomUUID();
		const at = Date.now() / 1000;
		await dbOf(admin.account)
			.prepare("INSERT INTO outbox_sights (id, account, data, created_ts) VALUES (?, ?, ?, ?)")
			.bind(
				sight,
				admin.account,
				JSON.stringify({ kind: "ledger", twin, ledger: admin.account, before: [], after }),
				at,
			)
			.run();
		const row = dbOf(admin.account).prepare(
			"INSERT INTO notification_outbox (message, account, subscription, trigger, twin, event, subscription_view, sent_ts, sight) VALUES (?, ?, ?, 'ledger.entry.added', ?, ?, '{}', ?, ?)",
		);
		const event = JSON.stringify({ n: { new_value: 1, old_value: null, changed_ts: at } });
		await dbOf(admin.account).batch(
			subscriptions.map((uuid) => row.bind(crypto.randomUUID(), admin.account, uuid, twin.uuid, event, at, sight)),
		);
		const queued: unknown[] = [];
		const to = {
			queue: { sendBatch: async (jobs: unknown[]) => void queued.push(...jobs) } as unknown as Queue,
			streams: env.STREAMS,
			homes: homesIn(env),
		};
		expect(await drainOutbox(database(dbOf(admin.account)), to, admin.account)).toBe(true);
		expect(queued.length).toBeGreaterThan(0);
		expect(queued.length).toBeLessThan(14);
		expect(await drainOutbox(database(dbOf(admin.account)), to, admin.account)).toBe(false);
		expect(queued).toHaveLength(14);
		// Every row queued whole, and the sight forgotten with the last of them.
		const left = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM outbox_sights WHERE id = ?")
			.bind(sight)
			.first<{ n: number }>();
		expect(left?.n).toBe(0);
	}, 60_000);
});

import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import type { EntryChange } from "../../src/account/ledger-writes";
import { writeLedger } from "../support/ledger-writes";
import { call } from "../support/requests";
import { type Account, bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { confirmedSubscription, outboxOf } from "../support/webhooks";
import { dbOf } from "../support/shards";

// One write by `admin` to `twin` at `at`, straight through writeLedger with its fan-out bound.
function write(
	admin: Account,
	twin: string,
	entries: Record<string, EntryChange>,
	at: number,
	notify: { fanOut: number; beforeCommit?: () => Promise<void> },
) {
	const writer = {
		account: admin.account,
		user: admin.user,
		role: admin.role,
		description: {},
		statement: { effect: "deny" as const, actions: null },
		rules: { twin: null, entry: null, identity: null },
	};
	const twinView = { uuid: twin, owner: admin.account, status: "alive", description: {} };
	return writeLedger(
		database(dbOf(admin.account)),
		{ action: "add_twin_ledger_entry", twin: twinView, writer, conditions: {}, kind: "add", entries },
		at,
		notify,
	);
}

describe("the fan-out of one write", () => {
	it("writes at most the bound's messages per topic, in the write's own batch", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const subscriptions = [];
		for (let i = 0; i < 3; i++)
			subscriptions.push((await confirmedSubscription(admin, "crowded", crypto.randomUUID())).uuid);
		const quiet = (await confirmedSubscription(admin, "quiet", crypto.randomUUID())).uuid;

		const at = Math.round(Date.now()) / 1000;
		let armed = 0;
		const entries = { level: { value: 1, publish: { crowded: "true", quiet: "true" } } };
		const result = await write(admin, twin, entries, at, { fanOut: 2, beforeCommit: async () => void armed++ });
		expect(result.published).toBe(true);
		expect(armed).toBe(1);
		const written = (await Promise.all(subscriptions.map(outboxOf))).flat();
		expect(written).toHaveLength(2);
		expect(await outboxOf(quiet)).toHaveLength(1);
		for (const row of [...written, ...(await outboxOf(quiet))]) {
			expect(row.message).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
			expect(row).toMatchObject({ trigger: "ledger.entry.added", twin, sent_ts: at, queued_ts: null });
		}
	});

	it("past the bound, serves the publisher's own subscriptions first, then each subscribing account in turn", async () => {
		const publisher = await bootstrap();
		const crowding = await bootstrap();
		const other = await bootstrap();
		for (const grantee of [crowding, other]) {
			const granted = await call("PATCH", `/notifications/webhooks/access/accounts/${grantee.account}`, {
				secret: publisher.secret,
				body: { topics: ["news"] },
			});
			expect(granted.status).toBe(200);
		}
		const subscribe = async (account: Account) =>
			(await confirmedSubscription(account, "news", crypto.randomUUID(), { account: publisher.account })).uuid;
		// The oldest subscriptions are one grantee's, enough to fill the bound by themselves; the
		// publisher's own is the newest.
		const crowded = [await subscribe(crowding), await subscribe(crowding), await subscribe(crowding)];
		const another = await subscribe(other);
		const own = await subscribe(publisher);

		const twin = await newTwin(publisher.secret);
		await write(publisher, twin, { level: { value: 1, publish: { news: "true" } } }, Date.now() / 1000, { fanOut: 3 });
		expect(await outboxOf(own)).toHaveLength(1);
		expect(await outboxOf(another)).toHaveLength(1);
		expect((await Promise.all(crowded.map(outboxOf))).map((rows) => rows.length)).toEqual([1, 0, 0]);
	});
});

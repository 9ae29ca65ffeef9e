import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { writeLedger } from "../../src/durable/ledger-writes";
import { bootstrap } from "../helpers";
import { newTwin } from "../ledgers/support";
import { confirmedSubscription, outboxOf } from "./support";

describe("the fan-out of one write", () => {
	it("writes at most the bound's messages per topic, in the write's own batch", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const subscriptions = [];
		for (let i = 0; i < 3; i++) subscriptions.push((await confirmedSubscription(admin, "crowded", crypto.randomUUID())).uuid);
		const quiet = (await confirmedSubscription(admin, "quiet", crypto.randomUUID())).uuid;

		const writer = { account: admin.account, user: admin.user, role: admin.role, description: {}, statement: { effect: "deny" as const, actions: null }, rules: { twin: null, entry: null, identity: null } };
		const twinView = { uuid: twin, owner: admin.account, status: "alive", description: {} };
		const entries = { level: { value: 1, publish: { crowded: "true", quiet: "true" } } };
		const at = Math.round(Date.now()) / 1000;
		let armed = 0;
		const result = await writeLedger(database(env.DB), { twin: twinView, writer, conditions: {}, kind: "add", entries }, at, {
			fanOut: 2,
			beforeCommit: async () => void armed++,
		});
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
});

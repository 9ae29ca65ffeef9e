import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bootstrap } from "../support/accounts";
import { expireUpload, uploadObject, uploadUrl } from "../docs/helpers";

// The account's object's one schedule (src/account/timers.ts) and the objects from before it.

describe("an account's object from before the schedule", () => {
	it("runs every step once on its first alarm, for the account its old key names, and forgets the old keys", async () => {
		const admin = await bootstrap();
		const { handler } = await uploadUrl(admin.secret);
		await expireUpload(handler);
		const stub = env.ACCOUNTS.getByName(admin.account);
		// As such an object stands: no timer, the account under its old key, an alarm set.
		await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
			state.storage.sql.exec("DELETE FROM timers");
			await state.storage.put("outbox-account", admin.account);
			await state.storage.put("sticker-due", 1);
			await state.storage.setAlarm(Date.now() + 60_000);
		});
		expect(await runDurableObjectAlarm(stub)).toBe(true);
		// The docs step released the expired upload URL.
		expect(await uploadObject(handler)).toBeUndefined();
		const left = await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => ({
			keys: [await state.storage.get("outbox-account"), await state.storage.get("sticker-due")],
		}));
		expect(left.keys).toEqual([undefined, undefined]);
	});
});

import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { confirmedSubscription, outboxOf } from "../support/webhooks";

const MERGE = { "content-type": "application/merge-patch+json" };
const patchEntries = (secret: string, twin: string, body: unknown, tail = "") =>
	call("PATCH", ledger(twin, "personal", tail), { secret, body, headers: MERGE });
const read = async (secret: string, twin: string) => (await call("GET", ledger(twin), { secret })).body.entries;

describe("ledger entries with a merge patch", () => {
	it('merges a value into the stored value; a non-object patch, "value": null included, replaces it', async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, {
			status: { value: { state: "running", rpm: 1450, fault: "none", limits: { max: 2000 } } },
			note: { value: "plain" },
			gone: { value: { a: 1 } },
		});
		const res = await patchEntries(admin.secret, twin, {
			entries: {
				status: { value: { rpm: 1500, fault: null, limits: { min: 10 } } },
				note: { value: { now: "an object" } },
				gone: { value: null },
			},
		});
		expect(res.status).toBe(200);
		expect(res.body.entries.status.value).toEqual({ state: "running", rpm: 1500, limits: { max: 2000, min: 10 } });
		expect(res.body.entries.note.value).toEqual({ now: "an object" });
		expect(res.body.entries.gone.value).toBeNull();
		const stored = await read(admin.secret, twin);
		expect([stored.status.value, stored.note.value, stored.gone.value]).toEqual([
			res.body.entries.status.value,
			{ now: "an object" },
			null,
		]);
	});

	it("merges values on the value route too, and reads application/json there as a replacement", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { status: { value: { state: "running", rpm: 1450 } } });
		const merged = await patchEntries(admin.secret, twin, { entries: { status: { value: { rpm: 0 } } } }, "/value");
		expect(merged.body.entries.status.value).toEqual({ state: "running", rpm: 0 });
		const replaced = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { status: { value: { rpm: 1 } } } },
		});
		expect(replaced.body.entries.status.value).toEqual({ rpm: 1 });
	});

	it("merges publish by topic (null removes one) and counts the topics once merged", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const nine = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`topic-${i}`, "true"]));
		await addEntries(admin.secret, twin, { level: { value: 1, publish: { alerts: "true", ...nine } } });
		const res = await patchEntries(admin.secret, twin, {
			entries: { level: { publish: { alerts: null, levels: "entry_value > 5" } } },
		});
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		expect(res.body.entries.level.publish).toEqual({ ...nine, levels: "entry_value > 5" });
		const over = await patchEntries(admin.secret, twin, { entries: { level: { publish: { extra: "true" } } } });
		expectError(over, 400, 400101);
		expect(over.body.details).toEqual([
			{ path: "entries.level.publish", message: expect.stringContaining("At most 10 topics") },
		]);
		expect(
			(
				await patchEntries(admin.secret, twin, {
					entries: { level: { publish: null, visibility: "true", history: "1D" } },
				})
			).body.entries.level,
		).toMatchObject({ visibility: "true", history: "1D" });
		expect((await read(admin.secret, twin)).level).not.toHaveProperty("publish");
	});

	it("refuses an entry given as null with 400101: deleting is delete_twin_ledger_entry's", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { level: { value: 1 } });
		const res = await patchEntries(admin.secret, twin, { entries: { level: null } });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path: "entries.level", message: expect.any(String) });
		expect((await read(admin.secret, twin)).level.value).toBe(1);
	});

	it("sees the merged entry for no-ops, history, events and the ledger's limit; conditions read the ledger as it is", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const sub = await confirmedSubscription(admin, "levels", crypto.randomUUID());
		const [added] = Object.values(
			await addEntries(admin.secret, twin, {
				level: { value: { a: 1, b: 2 }, history: "INF", publish: { levels: "true" } },
			}),
		) as { value_changed_ts: number }[];
		// A patch that leaves the value as it was: no new value_changed_ts, history record or event.
		await new Promise((resolve) => setTimeout(resolve, 5));
		const same = await patchEntries(admin.secret, twin, { entries: { level: { value: { a: 1, c: null } } } });
		expect(same.body.entries.level.value_changed_ts).toBe(added.value_changed_ts);
		const changed = await patchEntries(admin.secret, twin, {
			entries: { level: { value: { b: 3 } } },
			conditions: { level: "entry_value.b == 2" },
		});
		expect(changed.status).toBe(200);
		const history = await call("GET", ledger(twin, "personal", "/history"), { secret: admin.secret });
		expect(Object.values(history.body.entries.level)).toEqual([
			{ a: 1, b: 3 },
			{ a: 1, b: 2 },
		]);
		const events = (await outboxOf(sub.uuid)).map((row) => JSON.parse(row.event as string).level);
		expect(events).toEqual([
			expect.objectContaining({ new_value: { a: 1, b: 2 } }),
			expect.objectContaining({ new_value: { a: 1, b: 3 }, old_value: { a: 1, b: 2 } }),
		]);
		expectError(
			await patchEntries(admin.secret, twin, {
				entries: { level: { value: { b: 4 } } },
				conditions: { level: "entry_value.b == 2" },
			}),
			409,
			409102,
		);
		const large = await patchEntries(admin.secret, twin, {
			entries: { level: { value: { big: "x".repeat(40_000) } } },
		});
		expect(large.status).toBe(200);
		expectError(
			await patchEntries(admin.secret, twin, { entries: { level: { value: { more: "y".repeat(30_000) } } } }),
			400,
			400106,
		);
		expect(Object.keys((await read(admin.secret, twin)).level.value)).toEqual(["a", "b", "big"]);
	});
});

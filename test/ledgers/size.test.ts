import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";
import { dbOf } from "../support/shards";

const LIMIT = 64 * 1024;
const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value)).length;

describe("the 64 KiB ledger limit", () => {
	it("accepts a ledger of exactly 64 KiB as compact JSON, and refuses one byte more, writing nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const a = "x".repeat(40_000);
		await addEntries(admin.secret, twin, { a: { value: a } });
		// Two-byte characters count twice: the limit is on UTF-8 bytes.
		const room = LIMIT - bytes({ a, b: "" });
		const b = "é".repeat(Math.floor(room / 2)) + "y".repeat(room % 2);
		expect(bytes({ a, b })).toBe(LIMIT);
		await addEntries(admin.secret, twin, { b: { value: b } });

		const values = async () => {
			const entries = (await call("GET", ledger(twin, "personal", "/value"), { secret: admin.secret })).body.entries;
			return Object.fromEntries(Object.entries(entries).map(([name, e]) => [name, (e as { value: unknown }).value]));
		};
		expect(bytes(await values())).toBe(LIMIT);

		expectError(
			await call("POST", ledger(twin), { secret: admin.secret, body: { entries: { c: { value: 0 } } } }),
			400,
			400106,
		);
		const longer = await call("PATCH", ledger(twin, "personal", "/value"), {
			secret: admin.secret,
			body: { entries: { b: { value: `${b}z` } } },
		});
		expectError(longer, 400, 400106);
		expect(await values()).toEqual({ a, b });

		// Properties are stored too, so they count; a shorter value makes room again.
		expectError(
			await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { b: { history: "INF" } } } }),
			400,
			400106,
		);
		expect(
			(
				await call("PATCH", ledger(twin, "personal", "/value"), {
					secret: admin.secret,
					body: { entries: { b: { value: "short" } } },
				})
			).status,
		).toBe(200);
		expect(
			(await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { b: { history: "INF" } } } }))
				.status,
		).toBe(200);
		await addEntries(admin.secret, twin, { c: { value: [1, 2, 3] } });
		expect(bytes(await values())).toBe(bytes({ a, b: "short", c: [1, 2, 3] }));
	});

	it("counts each entry's visibility, history and publish as stored, to the byte", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const rule = (length: number) => `entry_name != '${"r".repeat(length - 16)}'`;
		const publish = { readings: rule(1000), alarms: rule(1000) };
		const big = "x".repeat(40_000);
		await addEntries(admin.secret, twin, { big: { value: big } });
		// The values' compact JSON, then the rules and history as the row stores them.
		const a = "x".repeat(LIMIT - bytes({ big, a: "" }) - 1023 - "1D".length - bytes(publish));
		await addEntries(admin.secret, twin, { a: { value: a, visibility: rule(1023), history: "1D", publish } });
		expectError(
			await call("POST", ledger(twin), { secret: admin.secret, body: { entries: { b: { value: null } } } }),
			400,
			400106,
		);
		expectError(
			await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { a: { visibility: rule(1024) } } } }),
			400,
			400106,
		);
		expect(
			(
				await call("PATCH", ledger(twin), {
					secret: admin.secret,
					body: { entries: { a: { visibility: rule(1022) } } },
				})
			).status,
		).toBe(200);

		// Large rules on small values fill the ledger as large values do, so a read of the
		// ledger loads at most 64 KiB, rules included.
		const other = await newTwin(admin.secret);
		const topics = Object.fromEntries(Array.from({ length: 10 }, (_, t) => [`topic-${t}`, rule(1000 + t)]));
		let refused = 0;
		for (let i = 0; i < 10; i++) {
			const res = await call("POST", ledger(other), {
				secret: admin.secret,
				body: { entries: { [`e${i}`]: { value: 0, visibility: rule(1024), publish: topics } } },
			});
			if (res.status !== 201) {
				expectError(res, 400, 400106);
				refused++;
			}
		}
		expect(refused).toBe(5);
		const stored = await dbOf(other)
			.prepare(
				"SELECT sum(length(name) + length(value) + length(coalesce(visibility, '')) + length(coalesce(history, '')) + length(coalesce(publish, ''))) AS bytes FROM ledger_entries WHERE twin = ?",
			)
			.bind(other)
			.first<{ bytes: number }>();
		expect(stored?.bytes).toBeLessThanOrEqual(LIMIT);
	});

	it("counts the ledger of one account on one twin only", async () => {
		const admin = await bootstrap();
		const [first, second] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		const big = "x".repeat(60_000);
		await addEntries(admin.secret, first, { big: { value: big } });
		await addEntries(admin.secret, second, { big: { value: big } });
		expectError(
			await call("POST", ledger(first), {
				secret: admin.secret,
				body: { entries: { more: { value: big.slice(0, 6000) } } },
			}),
			400,
			400106,
		);
	});
});

import { describe, expect, it } from "vitest";
import { bootstrap, call, expectError } from "../helpers";
import { addEntries, ledger, newTwin } from "./support";

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
		await addEntries(admin.secret, twin, { b: { value: b, visibility: "true" } });

		const values = async () => {
			const entries = (await call("GET", ledger(twin, "personal", "/value"), { secret: admin.secret })).body.entries;
			return Object.fromEntries(Object.entries(entries).map(([name, e]) => [name, (e as { value: unknown }).value]));
		};
		expect(bytes(await values())).toBe(LIMIT);

		expectError(await call("POST", ledger(twin), { secret: admin.secret, body: { entries: { c: { value: 0 } } } }), 400, 400106);
		const longer = await call("PATCH", ledger(twin, "personal", "/value"), { secret: admin.secret, body: { entries: { b: { value: `${b}z` } } } });
		expectError(longer, 400, 400106);
		expect(await values()).toEqual({ a, b });

		// Properties do not count, and a shorter value fits again.
		expect((await call("PATCH", ledger(twin), { secret: admin.secret, body: { entries: { b: { visibility: null, history: "INF" } } } })).status).toBe(200);
		expect((await call("PATCH", ledger(twin, "personal", "/value"), { secret: admin.secret, body: { entries: { b: { value: "short" } } } })).status).toBe(200);
		await addEntries(admin.secret, twin, { c: { value: [1, 2, 3] } });
		expect(bytes(await values())).toBe(bytes({ a, b: "short", c: [1, 2, 3] }));
	});

	it("counts the ledger of one account on one twin only", async () => {
		const admin = await bootstrap();
		const [first, second] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		const big = "x".repeat(60_000);
		await addEntries(admin.secret, first, { big: { value: big } });
		await addEntries(admin.secret, second, { big: { value: big } });
		expectError(await call("POST", ledger(first), { secret: admin.secret, body: { entries: { more: { value: big.slice(0, 6000) } } } }), 400, 400106);
	});
});

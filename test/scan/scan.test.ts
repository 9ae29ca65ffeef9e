import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AccountDO } from "../../src/objects";
import { call, d1Cost, expectError } from "../support/requests";
import { type Account, bootstrap, createUser, issueSecret } from "../support/accounts";
import { scan, seedTwins, walk } from "../support/twins";
import { fireAccountAlarm } from "../support/objects";

describe("scan_twins parameters", () => {
	it.each([
		["count=0", "count"],
		["count=1001", "count"],
		["count=abc", "count"],
		["count=1.5", "count"],
		["count=-1", "count"],
		["count=", "count"],
		["details=yes", "details"],
		["details=", "details"],
		["match=TWIN.a%20%3D%3D", "match"],
		["match=nope", "match"],
		["colour=red", "colour"],
	])("answers 400 with details for %s", async (query, path) => {
		const admin = await bootstrap();
		const res = await scan(admin.secret, query);
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([{ path, message: expect.any(String) }]);
	});

	it("names the position of a match parse error", async () => {
		const admin = await bootstrap();
		const res = await scan(admin.secret, `match=${encodeURIComponent("TWIN.a == 1 and and")}`);
		expect(res.body.details[0].message).toMatch(/at position \d+/);
	});

	it("defaults to 100 twins, uuids only, and accepts details in any case", async () => {
		const admin = await bootstrap();
		await seedTwins(
			admin.account,
			Array.from({ length: 150 }, (_, i) => ({ i })),
		);
		const res = await scan(admin.secret, "");
		expect(res.body.twins).toHaveLength(100);
		expect(typeof res.body.twins[0]).toBe("string");
		expect(typeof res.body.cursor).toBe("string");
		for (const value of ["TRUE", "True", "1"]) {
			expect(typeof (await scan(admin.secret, `count=1&details=${value}`)).body.twins[0]).toBe("object");
		}
		for (const value of ["FALSE", "0"]) {
			expect(typeof (await scan(admin.secret, `count=1&details=${value}`)).body.twins[0]).toBe("string");
		}
	});

	it("answers an empty account with no twins and no cursor", async () => {
		const admin = await bootstrap();
		expect((await scan(admin.secret, "details=true")).body).toEqual({ cursor: null, twins: [] });
	});
});

describe("a full walk", () => {
	it.each([1, 7, 100, 1000])(
		"returns every twin exactly once with count=%i and ends with cursor null",
		async (count) => {
			const admin = await bootstrap();
			const other = await bootstrap();
			await seedTwins(other.account, [{ i: -1 }]);
			const total = count === 1 ? 23 : count === 7 ? 50 : count * 2 + 3;
			const uuids = await seedTwins(
				admin.account,
				Array.from({ length: total }, (_, i) => ({ i, even: i % 2 === 0 })),
			);

			const { seen, pages } = await walk(admin.secret, `count=${count}`);
			expect(seen).toHaveLength(total);
			expect(new Set(seen)).toEqual(new Set(uuids));
			expect(pages).toBe(Math.floor(total / count) + 1);

			const evens = uuids.filter((_, i) => i % 2 === 0);
			const matched = await walk(admin.secret, `count=${count}&match=${encodeURIComponent("TWIN.even == true")}`);
			expect(new Set(matched.seen)).toEqual(new Set(evens));
			expect(matched.seen).toHaveLength(evens.length);
		},
	);

	it("evaluates what SQL leaves open (regular expressions) to the same result", async () => {
		const admin = await bootstrap();
		const uuids = await seedTwins(
			admin.account,
			["alpha", "beta", "alpine", "gamma"].map((name) => ({ name })),
		);
		const { seen } = await walk(admin.secret, `count=3&match=${encodeURIComponent("TWIN.name =~ '^al'")}`);
		expect(new Set(seen)).toEqual(new Set([uuids[0], uuids[2]]));
	});

	it("with details, returns only the visible twins, with their fields; without, every uuid", async () => {
		const admin = await bootstrap();
		const uuids = await seedTwins(admin.account, [{ site: "north" }, { site: "south" }, { site: "north", x: 1 }]);
		const role = await call("POST", "/roles", {
			secret: admin.secret,
			body: { name: "North", rules: { twin: "TWIN.site == USER.site" } },
		});
		const user = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "n", role: role.body.uuid, description: { site: "north" } },
		});
		const secret = await issueSecret(admin, user.body.uuid);

		expect(new Set((await walk(secret, "count=2")).seen)).toEqual(new Set(uuids));
		const detailed = (await walk(secret, "count=2&details=true")).seen as { uuid: string }[];
		expect(new Set(detailed.map((t) => t.uuid))).toEqual(new Set([uuids[0], uuids[2]]));
		expect(detailed.find((t) => t.uuid === uuids[2])).toEqual({
			uuid: uuids[2],
			owner: admin.account,
			status: "alive",
			updated_ts: 1,
			description: { site: "north", x: 1 },
			creation_certificate: { uuid: uuids[2], creator: admin.account, created_ts: 1 },
			termination_certificate: null,
		});
	});

	it("reads at most count + 5 rows in two D1 queries per call, wherever the page is", async () => {
		const admin = await bootstrap();
		await seedTwins(
			admin.account,
			Array.from({ length: 2500 }, (_, i) => ({ i })),
		);
		for (const count of [1, 10, 1000]) {
			let cursor: string | null = null;
			for (let page = 0; page < 3; page++) {
				const res = await scan(
					admin.secret,
					`count=${count}&details=true&match=${encodeURIComponent("TWIN.i >= 0")}${cursor ? `&cursor=${cursor}` : ""}`,
				);
				expect(d1Cost(res, "rows_read")).toBeLessThanOrEqual(count + 5);
				// The credential lookup, and the page the account's object reads.
				expect(d1Cost(res, "queries")).toBe(2);
				cursor = res.body.cursor;
			}
		}
	});
});

describe("cursors", () => {
	async function firstCursor(account: Account, query = "count=2") {
		const res = await scan(account.secret, query);
		expect(res.body.cursor).toEqual(expect.any(String));
		return res;
	}

	it("repeat their page when reused, with the same next cursor", async () => {
		const admin = await bootstrap();
		await seedTwins(
			admin.account,
			Array.from({ length: 6 }, (_, i) => ({ i })),
		);
		const { body } = await firstCursor(admin);
		const once = await scan(admin.secret, `count=2&cursor=${body.cursor}`);
		const twice = await scan(admin.secret, `count=2&cursor=${body.cursor}`);
		expect(twice.body).toEqual(once.body);
		expect(once.body.twins).not.toEqual(body.twins);
	});

	it("are refused with another account, another user, another match or details, or tampered", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		await seedTwins(
			admin.account,
			Array.from({ length: 6 }, (_, i) => ({ i })),
		);
		await seedTwins(
			other.account,
			Array.from({ length: 6 }, (_, i) => ({ i })),
		);
		const colleague = { ...admin, secret: await issueSecret(admin, await createUser(admin)) };
		const { cursor } = (await firstCursor(admin)).body;
		const refused = [
			[other.secret, `count=2&cursor=${cursor}`],
			[colleague.secret, `count=2&cursor=${cursor}`],
			[admin.secret, `count=2&cursor=${cursor}&match=true`],
			[admin.secret, `count=2&cursor=${cursor}&details=true`],
			[admin.secret, `count=2&cursor=${cursor.slice(0, -1)}${cursor.endsWith("A") ? "B" : "A"}`],
			[admin.secret, "count=2&cursor=forged"],
		];
		for (const [secret, query] of refused) expectError(await scan(secret, query), 400, 400104);
		expect((await scan(admin.secret, `count=2&cursor=${cursor}`)).status).toBe(200);
	});

	it("expire after 24 hours unused, and the alarm sweeps them", async () => {
		const admin = await bootstrap();
		await seedTwins(
			admin.account,
			Array.from({ length: 4 }, (_, i) => ({ i })),
		);
		const { cursor } = (await firstCursor(admin)).body;
		const stub = env.ACCOUNTS.getByName(admin.account);
		const count = () =>
			runInDurableObject(
				stub,
				(_: AccountDO, state) => state.storage.sql.exec("SELECT count(*) AS n FROM cursors").one().n,
			);
		expect(await count()).toBe(1);
		expect(await runInDurableObject(stub, (_: AccountDO, state) => state.storage.getAlarm())).toEqual(
			expect.any(Number),
		);

		await runInDurableObject(stub, (_: AccountDO, state) => {
			state.storage.sql.exec("UPDATE cursors SET expires_at = expires_at - 86401");
		});
		expectError(await scan(admin.secret, `count=2&cursor=${cursor}`), 400, 400104);
		expect(await fireAccountAlarm(admin.account)).toBe(true);
		expect(await count()).toBe(0);
	});
});

import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin, seedTwins } from "../support/twins";
import { attach, seedIdentities } from "./helpers";

// Of this file only: other files' accounts in the same database attach identities too, some
// of them public, and resolving in the system context reads every account's.
const RFID = `RFID#${crypto.randomUUID().slice(0, 8)}`;
const resolve = (secret: string, identity: string, query = "") =>
	call("GET", `/resolve/${encodeURIComponent(identity)}${query ? `?${query}` : ""}`, { secret });

describe("resolve_twin_identity", () => {
	it("finds the caller's account's twins by its own identity (context personal by default)", async () => {
		const admin = await bootstrap();
		const [one, two] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await attach(admin.secret, one, { [RFID]: {} });
		await attach(admin.secret, two, { [RFID]: {}, "SN#1": {} });
		const res = await resolve(admin.secret, RFID);
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ twins: [one, two].sort(), cursor: null });
		expect((await resolve(admin.secret, RFID, `context=${admin.account}`)).body).toEqual(res.body);
		expect((await resolve(admin.secret, "SN#1", "context=system")).body).toEqual({ twins: [two], cursor: null });
		expect((await resolve(admin.secret, "SN#2")).body).toEqual({ twins: [], cursor: null });
	});

	it("resolves from a second account that was granted visibility, not from a third", async () => {
		const [a, b, c] = [await bootstrap(), await bootstrap(), await bootstrap()];
		const twin = await newTwin(a.secret, { shared: true });
		await attach(a.secret, twin, { [RFID]: { visibility: "USER.partner == true" } });
		const rules = { twin: "TWIN.shared == true", identity: "true" };
		const { secret: bReader } = await userWithRules(b, rules, { partner: true });
		const { secret: cReader } = await userWithRules(c, rules, { partner: false });

		for (const context of ["system", a.account, `${c.account},${a.account}`]) {
			expect((await resolve(bReader, RFID, `context=${context}`)).body).toEqual({ twins: [twin], cursor: null });
			expect((await resolve(cReader, RFID, `context=${context}`)).body).toEqual({ twins: [], cursor: null });
		}
		// Personal means the caller's account's identities only.
		expect((await resolve(bReader, RFID)).body).toEqual({ twins: [], cursor: null });
		// A role without an identity rule sees no other account's identity.
		expect((await resolve(b.secret, RFID, "context=system")).body).toEqual({ twins: [], cursor: null });
		// With details, the twin as scan_twins shows it.
		const detailed = await resolve(bReader, RFID, "context=system&details=true");
		expect(detailed.body.twins).toEqual([(await call("GET", `/twins/${twin}`, { secret: a.secret })).body]);
	});

	it("names twins the caller cannot see, but details only visible ones", async () => {
		const [a, b] = [await bootstrap(), await bootstrap()];
		const twin = await newTwin(a.secret, { shared: false });
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		const { secret: blind } = await userWithRules(b, { twin: "TWIN.shared == true", identity: "true" });
		// The identity route itself needs the twin visible, but resolving does not.
		expectError(await call("GET", `/twins/${twin}/identities`, { secret: blind }), 404, 404102);
		expect((await resolve(blind, RFID, "context=system")).body).toEqual({ twins: [twin], cursor: null });
		expect((await resolve(blind, RFID, "context=system&details=TRUE")).body).toEqual({ twins: [], cursor: null });
	});

	it("leaves out expired identities, the caller's own included", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { [RFID]: { validity_ts: 1 } });
		expect((await resolve(admin.secret, RFID)).body).toEqual({ twins: [], cursor: null });
		await call("PATCH", `/twins/${twin}/identities/${encodeURIComponent(RFID)}`, {
			secret: admin.secret,
			body: { validity_ts: null },
		});
		expect((await resolve(admin.secret, RFID)).body).toEqual({ twins: [twin], cursor: null });
	});

	it("resolves identities on terminated twins", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await call("DELETE", `/twins/${twin}`, { secret: admin.secret });
		await attach(admin.secret, twin, { [RFID]: {} });
		expect((await resolve(admin.secret, RFID, "details=1")).body.twins).toEqual([
			expect.objectContaining({ uuid: twin, status: "terminated" }),
		]);
	});

	it.each([
		["a raw '#' (a fragment) leaves a bad identity", "/resolve/RFID#abc"],
		["an unknown context", `/resolve/${encodeURIComponent(RFID)}?context=everyone`],
		[
			"eleven accounts",
			`/resolve/${encodeURIComponent(RFID)}?context=${Array.from({ length: 11 }, () => crypto.randomUUID()).join(",")}`,
		],
		["an empty list entry", `/resolve/${encodeURIComponent(RFID)}?context=${crypto.randomUUID()},`],
		["a bad details", `/resolve/${encodeURIComponent(RFID)}?details=yes`],
		["an unknown parameter", `/resolve/${encodeURIComponent(RFID)}?page=x`],
	])("refuses %s with 400", async (_case, path) => {
		const admin = await bootstrap();
		expectError(await call("GET", path, { secret: admin.secret }), 400, 400101);
	});

	it("is one indexed lookup: D1 rows read stay the same with thousands of identities around", async () => {
		// Other tests' accounts share the database and attach RFID publicly: this one is unique.
		const RFID = `RFID#${crypto.randomUUID().replaceAll("-", "")}`;
		const [a, b] = [await bootstrap(), await bootstrap()];
		const twin = await newTwin(a.secret);
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		const { secret: reader } = await userWithRules(b, { twin: "true", identity: "true" });
		const cost = async (secret: string, query: string) => {
			const res = await resolve(secret, RFID, query);
			expect(res.body.twins).toEqual([twin]);
			return { queries: d1Cost(res, "queries"), rows: d1Cost(res, "rows_read") };
		};
		const measure = async () => [
			await cost(a.secret, ""),
			await cost(reader, "context=system"),
			await cost(reader, `context=${a.account}`),
		];
		// Identities that sort right after the identity, on twins of both accounts, public and
		// private: first a few, then thousands. An index lookup reads one entry past its range,
		// so the neighbour right after it must be there from the first measure on (a neighbour
		// that sorted elsewhere would make the count depend on the random identity).
		const seed = async (twinsPerAccount: number, offset: number) => {
			for (const account of [a.account, b.account]) {
				const twins = await seedTwins(
					account,
					Array.from({ length: twinsPerAccount }, () => ({})),
				);
				const rows = twins.flatMap((t, i) =>
					Array.from({ length: 10 }, (_, j) => ({
						twin: t,
						identity: `${RFID}_${offset + i}x${j}`,
						visibility: j % 2 ? "true" : null,
					})),
				);
				await seedIdentities(account, rows);
			}
		};
		await seed(1, 0);
		const before = await measure();
		await seed(200, 1);
		const after = await measure();
		expect(after).toEqual(before);
		for (const { queries, rows } of after) {
			// Authentication, then the identity's index entries and rows: the caller's account's
			// in its database, other accounts' in the directory's database or in each named
			// account's (at most both); then the twins, one query per database holding one.
			expect(queries).toBeLessThanOrEqual(1 + 1 + 2 + 2);
			expect(rows).toBeLessThanOrEqual(10);
		}
		console.log(`resolve with 4000 identities around: ${JSON.stringify(after)}`);
	});
});

describe("resolve_twin_identity's pages", () => {
	// Twins of about 30 KB each: one page of them with details would pass 4 MiB.
	const big = () => ({ notes: "n".repeat(30_000) });

	async function walk(secret: string, query: string) {
		const pages = [];
		let cursor: string | null = null;
		do {
			const res = await resolve(secret, RFID, `${query}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
			expect(res.status).toBe(200);
			pages.push({ bytes: JSON.stringify(res.body).length, twins: res.body.twins as (string | { uuid: string })[] });
			cursor = res.body.cursor;
		} while (cursor !== null && pages.length < 20);
		return pages;
	}

	it("stay under 4 MiB with details, and a walk of the cursors answers every twin once", async () => {
		const admin = await bootstrap();
		const twins = await seedTwins(admin.account, Array.from({ length: 300 }, big));
		await seedIdentities(
			admin.account,
			twins.map((twin) => ({ twin, identity: RFID })),
		);

		const pages = await walk(admin.secret, "details=true");
		expect(pages.length).toBeGreaterThan(2);
		for (const page of pages) expect(page.bytes).toBeLessThanOrEqual(4 * 1024 * 1024);
		const walked = pages.flatMap((page) => page.twins.map((twin) => (twin as { uuid: string }).uuid));
		expect(walked.sort()).toEqual([...twins].sort());

		// Without details nothing of the descriptions is answered, and one page holds them all.
		const names = await walk(admin.secret, "details=false");
		expect(names).toHaveLength(1);
		expect(names[0].twins.sort()).toEqual([...twins].sort());
	});

	it("refuse a forged cursor, and one from another query or another user", async () => {
		const admin = await bootstrap();
		const twins = await seedTwins(admin.account, Array.from({ length: 130 }, big));
		await seedIdentities(
			admin.account,
			twins.map((twin) => ({ twin, identity: RFID })),
		);
		const first = await resolve(admin.secret, RFID, "details=true");
		const cursor = encodeURIComponent(first.body.cursor);
		expect(cursor).not.toBe("null");
		expect((await resolve(admin.secret, RFID, `details=true&cursor=${cursor}`)).status).toBe(200);

		const { secret: other } = await userWithRules(admin, { twin: null, identity: null });
		for (const [secret, query] of [
			[admin.secret, `details=false&cursor=${cursor}`],
			[admin.secret, `details=true&context=system&cursor=${cursor}`],
			[other, `details=true&cursor=${cursor}`],
			[admin.secret, "details=true&cursor=x"],
			// Its last two characters changed, to others than they were.
			[admin.secret, `details=true&cursor=${cursor.slice(0, -2)}${cursor.endsWith("AA") ? "BB" : "AA"}`],
		]) {
			expectError(await resolve(secret, RFID, query), 400, 400104);
		}
		// The cursor tells nothing of the position it stands for.
		expect(decodeURIComponent(cursor)).not.toMatch(new RegExp(twins.map((t) => t.slice(0, 8)).join("|")));
	});
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { sibling } from "../../src/base/shards";
import { bootstrapOn, userWithRules } from "../support/accounts";
import { addEntries, ledger } from "../support/ledgers";
import { call, d1Cost, expectError, fingerprint } from "../support/requests";
import { newTwin } from "../support/twins";
import { attach, idPath } from "../identities/helpers";
import { createIndexes, indexBuilt, indexDefinition, indexRows } from "../indexes/helpers";

// What crosses accounts when the accounts live in different databases (docs/scaling.md): A on
// DB_0 owns a shared twin; B and C on DB_1 see it through their readers' twin rules.
const RFID = `RFID#${crypto.randomUUID().slice(0, 8)}`;
const resolve = (secret: string, identity: string, query: string) =>
	call("GET", `/resolve/${encodeURIComponent(identity)}?${query}`, { secret });
const at = (db: D1Database, sql: string, ...values: unknown[]) =>
	db
		.prepare(sql)
		.bind(...values)
		.first();

async function accountsApart() {
	const a = await bootstrapOn("DB_0");
	const [b, c] = [await bootstrapOn("DB_1"), await bootstrapOn("DB_1")];
	const twin = await newTwin(a.secret, { shared: true });
	const sees = { twin: "TWIN.shared == true", identity: "true", entry: "true" };
	const bReader = (await userWithRules(b, sees)).secret;
	const cReader = (await userWithRules(c, sees)).secret;
	return { a, b, c, twin, bReader, cReader };
}

describe("another database's twin", () => {
	it("is read, written to and refused as one of the caller's own database", async () => {
		const { a, b, twin, bReader } = await accountsApart();
		expect((await call("GET", `/twins/${twin}`, { secret: bReader })).body.owner).toBe(a.account);
		expectError(await call("PATCH", `/twins/${twin}`, { secret: b.secret, body: { description: {} } }), 404, 404102);
		const writer = await userWithRules(b, { twin: "TWIN.shared == true" });
		expectError(
			await call("PATCH", `/twins/${twin}`, { secret: writer.secret, body: { description: {} } }),
			403,
			403103,
		);
		expectError(await call("DELETE", `/twins/${twin}`, { secret: writer.secret }), 403, 403103);
		expect((await call("GET", `/twins/${twin}`, { secret: a.secret })).body.status).toBe("alive");
	});

	it("answers, hidden, exactly as an absent twin of the same bucket", async () => {
		const { twin, c } = await accountsApart();
		const absent = sibling(twin);
		const hidden = await call("GET", `/twins/${twin}`, { secret: c.secret });
		const nothing = await call("GET", `/twins/${absent}`, { secret: c.secret });
		expectError(hidden, 404, 404102);
		expect(fingerprint(hidden)).toEqual(fingerprint(nothing));
		expect(hidden.headers.get("x-d1-bookmark")).toMatch(/^DB_1=[^,]+, DB_0=/);
	});
});

describe("identities in two databases on one twin", () => {
	it("are each written in their account's database and listed to each other", async () => {
		const { a, b, twin, bReader, cReader } = await accountsApart();
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		await attach(bReader, twin, { [RFID]: { visibility: "true" }, "SN#b": {} });
		const key = "SELECT account FROM twin_identities WHERE twin = ? AND account = ?";
		expect(await at(env.DB_1, key, twin, b.account)).not.toBeNull();
		expect(await at(env.DB_0, key, twin, b.account)).toBeNull();

		const foreign = (secret: string) =>
			call("GET", `${idPath(twin)}?show_foreign=true`, { secret }).then((res) => res.body.foreign);
		// B's private SN#b is nobody else's to see.
		expect(Object.keys((await foreign(cReader))[b.account])).toEqual([RFID]);
		expect(Object.keys((await foreign(cReader))[a.account])).toEqual([RFID]);
		expect(Object.keys(await foreign(a.secret))).toEqual([]);
		const aReader = (await userWithRules(a, { identity: "true" })).secret;
		expect(Object.keys((await foreign(aReader))[b.account])).toEqual([RFID]);
	});

	it("resolve across both databases, in every context", async () => {
		const { a, b, twin, bReader, cReader } = await accountsApart();
		// This test's own: the other tests' shared twins carry RFID too.
		const RFID = `RFID#${crypto.randomUUID().slice(0, 8)}`;
		const bTwin = await newTwin(b.secret, { shared: true });
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		await attach(bReader, twin, { [RFID]: { visibility: "true" } });
		await attach(b.secret, bTwin, { [RFID]: { visibility: "true" } });

		const both = [twin, bTwin].sort();
		expect((await resolve(cReader, RFID, "context=system")).body).toEqual({ twins: both, cursor: null });
		expect((await resolve(cReader, RFID, `context=${b.account}`)).body).toEqual({ twins: both, cursor: null });
		expect((await resolve(cReader, RFID, `context=${a.account}`)).body).toEqual({ twins: [twin], cursor: null });
		// B's own attachments, one of them on A's twin in the other database.
		expect((await resolve(b.secret, RFID, "context=personal")).body).toEqual({ twins: both, cursor: null });
		const detailed = await resolve(cReader, RFID, "context=system&details=true");
		expect(detailed.body.twins.map((t: { owner: string }) => t.owner).sort()).toEqual([a.account, b.account].sort());
	});

	it("cost the same to resolve whoever's database holds what the caller may not see", async () => {
		const { a, c, twin, cReader } = await accountsApart();
		const probe = `PROBE#${crypto.randomUUID().slice(0, 8)}`;
		const before = await resolve(cReader, probe, "context=system");
		// A private identity of A's and a public one of C's own account's, hidden by nothing.
		await attach(a.secret, twin, { [probe]: {} });
		const after = await resolve(cReader, probe, "context=system");
		expect(fingerprint(after)).toEqual(fingerprint(before));
		expect(d1Cost(after, "queries")).toBe(d1Cost(before, "queries"));
		expect(c.account).not.toBe(a.account);
	});
});

describe("a ledger on another database's twin", () => {
	it("is written in the writer's database and read there", async () => {
		const { b, twin, bReader } = await accountsApart();
		await addEntries(bReader, twin, { seen: { value: 1 } });
		const row = "SELECT name FROM ledger_entries WHERE twin = ? AND account = ?";
		expect(await at(env.DB_1, row, twin, b.account)).not.toBeNull();
		expect(await at(env.DB_0, row, twin, b.account)).toBeNull();
		const read = await call("GET", ledger(twin), { secret: bReader });
		expect(read.status).toBe(200);
		expect(read.body.entries.seen.value).toBe(1);
	});
});

describe("an index over ledgers on twins of both databases", () => {
	it("shows a confined reader only the rows of twins its rule lets it see, judged where each twin lives", async () => {
		const { a, b, twin, bReader } = await accountsApart();
		const hidden = await newTwin(b.secret, { shared: false });
		const visible = await newTwin(b.secret, { shared: true });
		// One ledger of B's account on each: A's twin through a reader that sees it.
		await addEntries(bReader, twin, { n: { value: 7 } });
		for (const t of [hidden, visible]) await addEntries(b.secret, t, { n: { value: 7 } });
		// Built from the ledgers already there: each twin's owner is read in its own database.
		await createIndexes(b.secret, {
			seen: indexDefinition("true", { n: ["integer", "{LEDGER[n]}"] }),
			of_a: indexDefinition(`owner == '${a.account}'`, { owner: ["string", "{owner}"] }),
		});
		await indexBuilt(b.secret, "seen");
		await indexBuilt(b.secret, "of_a");
		expect((await indexRows(b.secret, "of_a")).rows).toEqual([
			expect.objectContaining({ twin, properties: { owner: a.account } }),
		]);
		const twinsOf = async (secret: string) => (await indexRows(secret, "seen")).rows.map((r) => r.twin).sort();
		expect(await twinsOf(b.secret)).toEqual([twin, hidden, visible].sort());
		// Decided in D1, and by the Worker where SQL cannot (a regular expression).
		const reader = await userWithRules(b, { twin: "TWIN.shared == true" });
		expect(await twinsOf(reader.secret)).toEqual([twin, visible].sort());
		const pattern = await userWithRules(b, { twin: `owner =~ '^${b.account}$'` });
		expect(await twinsOf(pattern.secret)).toEqual([hidden, visible].sort());
	});
});

import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { CURSOR_IDLE_SECONDS, type CursorBinding, CursorStore, MAX_CURSORS_PER_USER } from "../../src/account/cursors";
import type { AccountDO } from "../../src/objects";
import { MAX_PAGE_BYTES } from "../../src/account/scan";
import { call, expectError } from "../support/requests";
import { bootstrap, insertRole, issueSecret, userWith, userWithRules } from "../support/accounts";
import { scan, seedTwins, walk } from "../support/twins";
import { dbOf } from "../support/shards";

// Each attack of the bounded-cost issue: the scan answers 200 or 400, never 500, and another
// account is answered meanwhile. (How fast is measured by `npm run bench:abuse`, not here.)

const q = (rule: string) => encodeURIComponent(rule);

async function otherAccountAnswers() {
	const other = await bootstrap();
	expect((await call("GET", "/whoami", { secret: other.secret })).status).toBe(200);
}

describe("regular expressions run on RE2", () => {
	it("a catastrophic pattern over many twins answers at once and correctly", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [
			...Array.from({ length: 300 }, () => ({ s: `${"a".repeat(30)}b` })),
			{ s: "aaaa" },
		]);
		const [res] = await Promise.all([
			scan(admin.secret, `count=1000&match=${q("TWIN.s =~ '^(a+)+$'")}`),
			otherAccountAnswers(),
		]);
		expect(res.status).toBe(200);
		expect(res.body.twins).toHaveLength(1);
	});

	it("an ordinary-looking pattern over ordinary text, from a user who may only scan", async () => {
		const admin = await bootstrap();
		const text = `${"lorem ipsum dolor sit amet ".repeat(300)}!`;
		await seedTwins(
			admin.account,
			Array.from({ length: 50 }, () => ({ text })),
		);
		const scanner = await userWith(admin, { effect: "allow", actions: ["scan_twins"] });
		const [res] = await Promise.all([
			scan(scanner.secret, `count=1000&details=true&match=${q("TWIN.text =~ '^(\\\\w+\\\\s?)*$'")}`),
			otherAccountAnswers(),
		]);
		expect(res.status).toBe(200);
		expect(res.body.twins).toEqual([]);
	});

	it("a pattern is charged by its compiled program, which a counted repetition makes large", async () => {
		const admin = await bootstrap();
		const twins = await seedTwins(
			admin.account,
			Array.from({ length: 10 }, () => ({ s: "ab".repeat(1000) })),
		);
		// About 300 instructions over 2,000 characters: a few twins fill the page's budget.
		const medium = `count=1000&match=${q("TWIN.s !~ '(?:[ab][ab]?){99}[cd]'")}`;
		const first = await scan(admin.secret, medium);
		expect(first.status).toBe(200);
		expect(first.body.cursor).not.toBeNull();
		expect((await walk(admin.secret, medium)).seen.sort()).toEqual([...twins].sort());

		// About 3,000 instructions over 30,000 characters: one twin alone needs more than a request.
		const other = await bootstrap();
		await seedTwins(
			other.account,
			Array.from({ length: 3 }, () => ({ s: "ab".repeat(15_000) })),
		);
		const res = await scan(other.secret, `count=3&match=${q("TWIN.s =~ '(?:[ab][ab]?){999}[cd]'")}`);
		expectError(res, 400, 400101);
		expect(res.body.details[0]).toMatchObject({ path: "match", message: expect.stringContaining("more work") });
	});

	it("over the caller's own description, decided before any twin is read, is charged too", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [{ a: 1 }]);
		const user = await call("POST", "/users", {
			secret: admin.secret,
			body: { name: "big", role: admin.role, description: { s: "ab".repeat(15_000) } },
		});
		const secret = await issueSecret(admin, user.body.uuid);
		const res = await scan(secret, `count=1&match=${q("USER.s =~ '(?:[ab][ab]?){999}[cd]' or TWIN.a == 1")}`);
		expectError(res, 400, 400101);
		expect(res.body.details[0]).toMatchObject({ path: "match", message: expect.stringContaining("more work") });
	});

	it("refuses at parse a pattern RE2 cannot run, with its position", async () => {
		const admin = await bootstrap();
		const res = await scan(admin.secret, `match=${q("TWIN.s =~ '(a)\\\\1'")}`);
		expectError(res, 400, 400101);
		expect(res.body.details[0]).toMatchObject({ path: "match", message: expect.stringContaining("at position 14") });
	});
});

describe("substrings", () => {
	it("are decided outside D1, in linear time, and a page stops early past its work budget", async () => {
		const admin = await bootstrap();
		const long = "ab".repeat(8000);
		const twins = await seedTwins(
			admin.account,
			Array.from({ length: 200 }, (_, i) => ({ x: `${long}${i % 2 ? "!" : ""}`, y: `${"ab".repeat(4000)}!` })),
		);
		const rule = "TWIN.y in TWIN.x";
		const first = await scan(admin.secret, `count=1000&match=${q(rule)}`);
		expect(first.status).toBe(200);
		// 200 twins of 24,000 characters each: more than one page's budget.
		expect(first.body.cursor).not.toBeNull();
		const { seen } = await walk(admin.secret, `count=1000&match=${q(rule)}`);
		expect([...seen].sort()).toEqual(twins.filter((_, i) => i % 2).sort());
	});

	it("one twin that alone needs more work than a request may do is a 400, not a stall", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [{ x: "ab".repeat(16000) }]);
		const rule = Array.from({ length: 20 }, (_, i) => `TWIN.x !~ 'z${i}'`).join(" and ");
		const [res] = await Promise.all([scan(admin.secret, `match=${q(rule)}`), otherAccountAnswers()]);
		expectError(res, 400, 400101);
		expect(res.body.details[0]).toMatchObject({ path: "match", message: expect.stringContaining("more work") });
	});

	it("a literal on either side gives the same answers as the evaluator", async () => {
		const admin = await bootstrap();
		const [ab, cd] = await seedTwins(admin.account, [{ x: "ab" }, { x: "cd" }]);
		expect((await scan(admin.secret, `match=${q("TWIN.x in 'xxabxx'")}`)).body.twins).toEqual([ab]);
		expect((await scan(admin.secret, `match=${q("'d' in TWIN.x")}`)).body.twins).toEqual([cd]);
	});
});

describe("the work budget", () => {
	it("is not spent by match on a twin the caller cannot see: a guess at its description tells nothing", async () => {
		const admin = await bootstrap();
		// The twin rule is a regular expression, so SQL leaves it to the evaluator.
		const weak = await userWithRules(admin, { twin: "TWIN.label =~ '^pub'" });
		await call("POST", "/twins", {
			secret: admin.secret,
			body: { description: { label: "private", s: `K${"q".repeat(30_000)}` } },
		});
		// When the guess is wrong, `or` goes on to work that alone exceeds a request's budget
		// (grouped in pairs, to stay within the rule's depth limit).
		const pair = "(TWIN.s =~ 'z' or TWIN.s =~ 'z')";
		const costly = Array.from({ length: 16 }, () => pair).join(" or ");
		const probe = (guess: string) =>
			scan(weak.secret, `count=1&match=${encodeURIComponent(`TWIN.s =~ '^${guess}' or ${costly}`)}`);
		const [right, wrong] = [await probe("K"), await probe("J")];
		expect(right.status).toBe(200);
		expect(wrong.status).toBe(200);
		// Each match has a cursor of its own; whether there is one, and the twins, must agree.
		const seen = (page: typeof right) => [page.body.twins, page.body.cursor === null];
		expect(seen(wrong)).toEqual(seen(right));
		expect(right.body.twins).toEqual([]);
	});
});

describe("deep equality", () => {
	it("is charged by the size it walks, and a page stops early past its work budget", async () => {
		const admin = await bootstrap();
		const list = Array.from({ length: 2_000 }, () => ({}));
		const twins = await seedTwins(
			admin.account,
			Array.from({ length: 100 }, () => ({ x: list, y: list })),
		);
		const rule = `count=1000&match=${q("TWIN.x == TWIN.y")}`;
		const first = await scan(admin.secret, rule);
		expect(first.status).toBe(200);
		expect(first.body.cursor).not.toBeNull();
		expect((await walk(admin.secret, rule)).seen.sort()).toEqual([...twins].sort());
	});
});

describe("SQL of nested lists", () => {
	it("is measured while it is built: a short rule whose SQL would grow ninefold per level is left to the evaluator", async () => {
		const admin = await bootstrap();
		const [twin] = await seedTwins(admin.account, [{ a: 1 }]);
		let rule = "TWIN.a";
		for (let i = 0; i < 8; i++) rule = `(${rule} in [1, 2, 3, 4, 5, 6, 7, 8, true])`;
		expect(rule.length).toBeLessThan(300);
		const res = await scan(admin.secret, `match=${q(rule)}`);
		expect(res.status).toBe(200);
		expect(res.body.twins).toEqual([twin]);
	});
});

describe("page size", () => {
	it("stops before 4 MiB, with a cursor, and a walk still returns every twin once", async () => {
		const admin = await bootstrap();
		const big = { text: "x".repeat(32 * 1024 - 20) };
		const twins = await seedTwins(
			admin.account,
			Array.from({ length: 160 }, () => big),
		);
		const res = await call("GET", "/twins?count=1000&details=true", { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(JSON.stringify(res.body).length).toBeLessThanOrEqual(MAX_PAGE_BYTES);
		expect(res.body.cursor).not.toBeNull();
		expect(res.body.twins.length).toBeGreaterThan(100);
		const { seen } = await walk(admin.secret, "count=1000&details=true");
		expect(seen.map((t) => (t as { uuid: string }).uuid).sort()).toEqual([...twins].sort());
	});
});

describe("number literals", () => {
	it("refuses a non-finite one at parse", async () => {
		const admin = await bootstrap();
		for (const rule of ["TWIN.a > -1e999", "TWIN.a < 1e999"]) {
			const res = await scan(admin.secret, `match=${q(rule)}`);
			expectError(res, 400, 400101);
			expect(res.body.details[0].message).toMatch(/number out of range at position \d+/);
		}
	});

	it("a stored rule from before the check shows nothing instead of failing", async () => {
		const admin = await bootstrap();
		await seedTwins(admin.account, [{ a: 1 }]);
		const role = await insertRole(admin.account, { effect: "deny", actions: null });
		await dbOf(role)
			.prepare("UPDATE roles SET rules = ? WHERE uuid = ?")
			.bind(JSON.stringify({ twin: "TWIN.a > -1e999", entry: null, identity: null }), role)
			.run();
		const user = await userWith(admin, { effect: "deny", actions: null });
		await dbOf(user.user).prepare("UPDATE users SET role = ? WHERE uuid = ?").bind(role, user.user).run();
		const res = await scan(user.secret, "details=true");
		expect(res.status).toBe(200);
		expect(res.body.twins).toEqual([]);
	});
});

// A page's use of a cursor, as the account's object makes it: found, then touched.
function usedAt(store: CursorStore, id: string, owner: CursorBinding, at: number) {
	const cursor = store.find(id, owner, at);
	if (cursor) store.touch(cursor, at);
	return cursor?.after;
}

describe("cursors", () => {
	it("a user keeps at most 1000; one more evicts the least recently used", async () => {
		expect(MAX_CURSORS_PER_USER).toBe(1000);
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		await runInDurableObject(stub, (_: AccountDO, state) => {
			const store = new CursorStore(state.storage.sql, 3);
			const owner = { user: "u", binding: "b" };
			const use = (id: string, at: number) => usedAt(store, id, owner, at);
			const [a, b, c] = ["1", "2", "3"].map((after, i) => store.issue(owner, after, 100 + i).id);
			expect(use(a, 110)).toBe("1"); // a is now the most recently used
			const d = store.issue(owner, "4", 111).id;
			expect(use(b, 112)).toBeUndefined();
			expect([a, c, d].map((id) => use(id, 113))).toEqual(["1", "3", "4"]);
			// Another user's cursors are not counted against this one.
			store.issue({ user: "v", binding: "b" }, "1", 114);
			expect(use(a, 115)).toBe("1");
		});
	});

	it("a retried page reuses its cursor and rewrites it at most once a second", async () => {
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		await runInDurableObject(stub, (_: AccountDO, state) => {
			const store = new CursorStore(state.storage.sql);
			const owner = { user: "u", binding: "b" };
			const expiry = (id: string) =>
				state.storage.sql.exec<{ e: number }>("SELECT expires_at AS e FROM cursors WHERE id = ?", id).one().e;
			const first = store.issue(owner, "1", 100);
			expect(first.created).toBe(true);
			const retried = store.issue(owner, "1", 100.5);
			expect(retried).toEqual({ id: first.id, created: false });
			expect(expiry(first.id)).toBe(100 + CURSOR_IDLE_SECONDS);
			expect(usedAt(store, first.id, owner, 100.9)).toBe("1");
			expect(expiry(first.id)).toBe(100 + CURSOR_IDLE_SECONDS);
			expect(usedAt(store, first.id, owner, 101.5)).toBe("1");
			expect(expiry(first.id)).toBe(101.5 + CURSOR_IDLE_SECONDS);
			expect(store.issue(owner, "1", 103)).toEqual({ id: first.id, created: false });
			expect(expiry(first.id)).toBe(103 + CURSOR_IDLE_SECONDS);
		});
	});
});

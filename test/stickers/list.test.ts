import { describe, expect, it } from "vitest";
import { D1Meter } from "../../src/db/meter";
import { database } from "../../src/db/client";
import { stickersAddressedTo, stickersOnTwin } from "../../src/db/stickers";
import { call, d1Cost, expectError } from "../support/requests";
import { type Account, bootstrap, member, role, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { dbOf } from "../support/shards";
import { putStickers } from "./helpers";

const allow = { effect: "deny" as const, actions: null };
type Listed = {
	twin: string;
	account: string;
	color: string;
	note: string | null;
	validity_ts: number;
	created_ts: number;
};

const list = async (secret: string, query = "") => {
	const res = await call("GET", `/stickers${query}`, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.stickers as Listed[];
};

// Stickers of `account` addressed to `recipient`, written straight into D1 with the given
// created_ts (seconds), so that the order and the ranges do not wait on the clock: each row in
// the database its account's or its recipient's uuid names.
async function seed(account: string, recipient: string, rows: { twin: string; color: string; created_ts: number }[]) {
	const validity = Date.now() / 1000 + 3600;
	await dbOf(account).batch(
		rows.map((r) =>
			dbOf(account)
				.prepare(
					"INSERT INTO stickers (twin, account, color, note, recipients, validity_ts, created_ts, publish) VALUES (?, ?, ?, NULL, ?, ?, ?, '{}')",
				)
				.bind(r.twin, account, r.color, JSON.stringify([recipient]), validity, r.created_ts),
		),
	);
	await dbOf(recipient).batch(
		rows.map((r) =>
			dbOf(recipient)
				.prepare(
					"INSERT INTO sticker_recipients (recipient, twin, account, color, created_ts, note, validity_ts) VALUES (?, ?, ?, ?, ?, NULL, ?)",
				)
				.bind(recipient, r.twin, account, r.color, r.created_ts, validity),
		),
	);
}

describe("list_stickers", () => {
	it("lists the stickers addressed to the caller across twins, newest first, each once", async () => {
		const admin = await bootstrap();
		const [a, b] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await putStickers(admin.secret, a, { first: { recipients: [admin.user, admin.role], note: "n" } });
		await putStickers(admin.secret, b, {
			second: { recipients: [admin.account] },
			other: { recipients: [crypto.randomUUID()] },
		});
		const listed = await list(admin.secret);
		expect(listed.map((s) => s.color)).toEqual(["second", "first"]);
		expect(Object.keys(listed[1])).toEqual(["twin", "account", "color", "note", "validity_ts", "created_ts"]);
		expect(listed[1]).toMatchObject({ twin: a, account: admin.account, note: "n" });
	});

	it("orders by (created_ts, account, twin, color) descending and pages with limit and offset", async () => {
		const admin = await bootstrap();
		const twins = [await newTwin(admin.secret), await newTwin(admin.secret)].sort();
		await seed(admin.account, admin.user, [
			{ twin: twins[0], color: "aaa", created_ts: 100 },
			{ twin: twins[0], color: "bbb", created_ts: 100 },
			{ twin: twins[1], color: "aaa", created_ts: 100 },
			{ twin: twins[0], color: "ccc", created_ts: 200 },
			{ twin: twins[1], color: "ddd", created_ts: 50 },
		]);
		const all = await list(admin.secret);
		expect(all.map((s) => [s.created_ts, s.twin === twins[0] ? 0 : 1, s.color])).toEqual([
			[200, 0, "ccc"],
			[100, 1, "aaa"],
			[100, 0, "bbb"],
			[100, 0, "aaa"],
			[50, 1, "ddd"],
		]);
		expect(await list(admin.secret, "?limit=2")).toEqual(all.slice(0, 2));
		expect(await list(admin.secret, "?limit=2&offset=2")).toEqual(all.slice(2, 4));
		expect(await list(admin.secret, "?offset=4")).toEqual(all.slice(4));
		expect(await list(admin.secret, "?ge=60&le=100")).toEqual(all.slice(1, 4));
		expect(await list(admin.secret, "?color=aaa")).toEqual([all[1], all[3]]);
	});

	it("filters by context: personal by default, system, or one account", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		const seer = await member(other, await role(other, allow, { twin: "true" }));
		await putStickers(seer.secret, twin, { theirs: { recipients: [admin.user] } });
		await putStickers(admin.secret, twin, { ours: { recipients: [admin.user] } });
		expect((await list(admin.secret)).map((s) => s.color)).toEqual(["ours"]);
		expect((await list(admin.secret, "?context=system")).map((s) => s.color)).toEqual(["ours", "theirs"]);
		expect((await list(admin.secret, `?context=${other.account}`)).map((s) => s.color)).toEqual(["theirs"]);
	});

	it("drops stickers on twins the caller cannot see after the limit, and does not count them", async () => {
		const admin = await bootstrap();
		const open = await newTwin(admin.secret, { kind: "open" });
		const hidden = await newTwin(admin.secret, { kind: "hidden" });
		const reader = await userWithRules(admin, { twin: "TWIN.kind == 'open'" });
		await seed(admin.account, reader.user, [
			{ twin: open, color: "old", created_ts: 10 },
			{ twin: hidden, color: "mid", created_ts: 20 },
			{ twin: open, color: "new", created_ts: 30 },
		]);
		// A page of two holds "new" and the hidden "mid": one comes back.
		const res = await call("GET", "/stickers?limit=2", { secret: reader.secret });
		expect(res.body.stickers.map((s: Listed) => s.color)).toEqual(["new"]);
		const next = await call("GET", "/stickers?limit=2&offset=2", { secret: reader.secret });
		expect(next.body.stickers.map((s: Listed) => s.color)).toEqual(["old"]);
		// The hidden one costs what no sticker costs: the same as a page of one visible sticker.
		const one = await call("GET", "/stickers?limit=1", { secret: reader.secret });
		expect(d1Cost(res, "rows_read")).toBe(d1Cost(one, "rows_read"));
	});

	it("refuses bad queries with 400101", async () => {
		const admin = await bootstrap();
		for (const query of [
			"?limit=0",
			"?limit=101",
			"?offset=-1",
			"?offset=901",
			"?offset=950&limit=60",
			"?ge=5&le=4",
			"?ge=abc",
			"?color=x",
			"?context=nobody",
			"?context=a,b",
			"?page=2",
		]) {
			const res = await call("GET", `/stickers${query}`, { secret: admin.secret });
			expectError(res, 400, 400101);
		}
		expect((await call("GET", "/stickers?offset=900&limit=100", { secret: admin.secret })).status).toBe(200);
	});

	it("reads a bounded range whatever the number addressed to the caller", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await seed(
			admin.account,
			admin.user,
			Array.from({ length: 300 }, (_, i) => ({ twin, color: `c-${String(i).padStart(3, "0")}`, created_ts: 1000 + i })),
		);
		const page = await list(admin.secret, "?limit=5");
		expect(page.map((s) => s.created_ts)).toEqual([1299, 1298, 1297, 1296, 1295]);
		// What D1 reads for one address: the range's index entries and a sticker row each.
		const meter = new D1Meter();
		const rows = await stickersAddressedTo(
			database(meter.wrap(dbOf(admin.account))),
			admin.user,
			{ at: Date.now() / 1000 },
			5,
		);
		expect(rows).toHaveLength(5);
		expect(meter.rowsRead).toBeLessThanOrEqual(2 * 5 + 2);
	});
});

// What D1 reads for the sticker reads, counted by a meter of its own (Server-Timing counts
// only what the caller sees): stickers another account addressed to the caller, which the
// read leaves out, must not be read past.
describe("what a sticker read costs", () => {
	const at = () => Date.now() / 1000;

	// 300 stickers of another account addressed to `crowd`, and three of the caller's own
	// account, older, addressed to its user.
	async function crowded(crowd: (admin: Account) => string) {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const other = crypto.randomUUID();
		await seed(
			other,
			crowd(admin),
			Array.from({ length: 300 }, (_, i) => ({ twin, color: `c-${String(i).padStart(3, "0")}`, created_ts: 1000 + i })),
		);
		await seed(
			admin.account,
			admin.user,
			[0, 1, 2].map((i) => ({ twin, color: `mine-${i}`, created_ts: 500 + i })),
		);
		return { admin, twin, other };
	}

	it("list_stickers reads a bounded range with a putting account or a color, whatever else is addressed to the caller", async () => {
		const { admin, other } = await crowded((admin) => admin.user);
		const read = async (filter: { account?: string; color?: string }, reach: number) => {
			const meter = new D1Meter();
			const rows = await stickersAddressedTo(
				database(meter.wrap(dbOf(admin.account))),
				admin.user,
				{ ...filter, at: at() },
				reach,
			);
			return { colors: rows.map((row) => row.color), rowsRead: meter.rowsRead };
		};
		const own = await read({ account: admin.account }, 100);
		expect(own.colors).toEqual(["mine-2", "mine-1", "mine-0"]);
		expect(own.rowsRead).toBeLessThanOrEqual(2 * 3 + 2);
		const colored = await read({ color: "mine-1" }, 100);
		expect(colored.colors).toEqual(["mine-1"]);
		expect(colored.rowsRead).toBeLessThanOrEqual(2 + 2);
		const both = await read({ account: other, color: "c-007" }, 100);
		expect(both.colors).toEqual(["c-007"]);
		expect(both.rowsRead).toBeLessThanOrEqual(2 + 2);
		expect((await read({ account: admin.account, color: "c-007" }, 100)).rowsRead).toBeLessThanOrEqual(2);
		expect(await list(admin.secret, "?limit=5")).toHaveLength(3);
	});

	it("get_stickers reads what it answers, whatever else is addressed to the caller on the twin", async () => {
		const { admin, twin, other } = await crowded((admin) => admin.account);
		const addresses = [admin.user, admin.role, admin.account];
		const read = async (accounts: string[] | null, limit: number) => {
			const meter = new D1Meter();
			const rows = await stickersOnTwin(meter.wrap(dbOf(admin.account)), twin, addresses, accounts, at(), limit);
			return { colors: rows.map((row) => row.color), rowsRead: meter.rowsRead };
		};
		const own = await read([admin.account], 1000);
		expect(own.colors).toEqual(["mine-2", "mine-1", "mine-0"]);
		expect(own.rowsRead).toBeLessThanOrEqual(2 * 3 + 3);
		// Any account: one range an address, merged newest first, each read no further than the limit.
		const newest = await read(null, 10);
		expect(newest.colors.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `c-${299 - i}`));
		expect(newest.rowsRead).toBeLessThanOrEqual(3 * 2 * 10 + 3);
		// Ten accounts: two statements an address, each stopping at the limit.
		const ten = await read([admin.account, ...Array.from({ length: 8 }, () => crypto.randomUUID()), other], 10);
		expect(ten.colors.slice(0, 10)).toEqual(Array.from({ length: 10 }, (_, i) => `c-${299 - i}`));
		expect(ten.rowsRead).toBeLessThanOrEqual(6 * 2 * 10 + 6);
		const answered = await call("GET", `/twins/${twin}/stickers?context=personal`, { secret: admin.secret });
		expect(Object.keys(answered.body.accounts[admin.account]).sort()).toEqual(["mine-0", "mine-1", "mine-2"]);
	});
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { homeOf } from "../../src/db/shards";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrapOn, member, role, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { dbOf } from "../support/shards";
import { clockPast, until } from "../support/waiting";
import { failingBatches, loggedErrors } from "../support/faults";
import { fireAccountAlarm, objectEnv } from "../support/objects";
import { putStickers, stickerPath } from "./helpers";

// Stickers whose recipients live in another database than the putting account's
// (docs/stickers.md "Across databases"): each recipient's database holds a copy of its row,
// written and ended by the putting account's object through its outbox of copies.

const seeing = { effect: "deny" as const, actions: null };
// How long a recipient in another database may wait for a put, or an end, to show.
const LAG_MS = 5_000;

type Summary = { note: string | null; validity_ts: number; created_ts: number };

const onTwin = async (secret: string, twin: string, query = "") => {
	const res = await call("GET", stickerPath(twin, undefined, query), { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.accounts as Record<string, Record<string, Summary>>;
};

const listed = async (secret: string, query = "?context=system") => {
	const res = await call("GET", `/stickers${query}`, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.stickers as ({ twin: string; account: string; color: string } & Summary)[];
};

// The recipient rows of `account`'s stickers on `twin` in the database of the account `where`.
const recipientRows = async (where: string, account: string, twin: string) =>
	(
		await dbOf(where)
			.prepare(
				"SELECT recipient, color FROM sticker_recipients WHERE account = ? AND twin = ? ORDER BY color, recipient",
			)
			.bind(account, twin)
			.all<{ recipient: string; color: string }>()
	).results;

// The account's outbox of copies, oldest first.
const outbox = async (account: string) =>
	(
		await dbOf(account)
			.prepare("SELECT change, color FROM sticker_copies WHERE account = ? ORDER BY id")
			.bind(account)
			.all<{ change: string; color: string }>()
	).results;

// D1 whose statements matching `pattern` fail when prepared, as a database that went away would.
function refusing(db: D1Database, pattern: RegExp): D1Database {
	return new Proxy(db, {
		get(target, property) {
			if (property === "prepare")
				return (query: string) => {
					if (pattern.test(query)) throw new Error("injected fault");
					return target.prepare(query);
				};
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// An account on each database: a user of the first that sees every twin (the putter), and a
// twin of the second.
async function apart(putterOn: string, recipientOn: string) {
	const putting = await bootstrapOn(putterOn);
	const receiving = await bootstrapOn(recipientOn);
	const putter = await member(putting, await role(putting, seeing, { twin: "true" }));
	const twin = await newTwin(receiving.secret);
	return { putting, receiving, putter, twin };
}

describe.each([
	["DB_0", "DB_1"],
	["DB_1", "DB_0"],
])("a sticker put on %s for recipients on %s", (putterOn, recipientOn) => {
	it("shows to its recipients within 5 s, each once, and goes with each removal", async () => {
		const { putting, receiving, putter, twin } = await apart(putterOn, recipientOn);
		expect([homeOf(env, putting.account), homeOf(env, receiving.account)]).toEqual([putterOn, recipientOn]);
		const put = await putStickers(putter.secret, twin, {
			red: { note: "inspect this", recipients: [receiving.user, receiving.role] },
			blue: { recipients: [receiving.account, putter.user] },
		});
		const shown = await until(
			() => onTwin(receiving.secret, twin),
			(accounts) => Object.keys(accounts[putting.account] ?? {}).length === 2,
			"the copies",
			LAG_MS,
		);
		const summary = (color: "red" | "blue") => ({
			note: put[color].note,
			validity_ts: put[color].validity_ts,
			created_ts: put[color].created_ts,
		});
		expect(shown).toEqual({ [putting.account]: { red: summary("red"), blue: summary("blue") } });
		expect(await onTwin(receiving.secret, twin, `?context=${putting.account}`)).toEqual(shown);
		expect(await onTwin(receiving.secret, twin, "?context=personal")).toEqual({});
		const all = await listed(receiving.secret);
		expect(all.map((s) => [s.account, s.twin, s.color]).sort()).toEqual([
			[putting.account, twin, "blue"],
			[putting.account, twin, "red"],
		]);
		expect(await listed(receiving.secret, `?context=${putting.account}`)).toEqual(all);
		expect(await listed(receiving.secret)).toHaveLength(2);

		// Each recipient's row is in its own database: the putter's own one beside the sticker,
		// the others as copies, and nothing is left in the outbox.
		expect(await recipientRows(receiving.account, putting.account, twin)).toEqual([
			{ recipient: receiving.account, color: "blue" },
			...[receiving.role, receiving.user].sort().map((recipient) => ({ recipient, color: "red" })),
		]);
		expect(await recipientRows(putting.account, putting.account, twin)).toEqual([
			{ recipient: putter.user, color: "blue" },
		]);
		expect(await outbox(putting.account)).toEqual([]);

		// Removed by the putter, a recipient too: gone for the others within 5 s.
		expect((await call("DELETE", stickerPath(twin, "blue"), { secret: putter.secret })).status).toBe(200);
		await until(
			() => onTwin(receiving.secret, twin),
			(accounts) => Object.keys(accounts[putting.account] ?? {}).join() === "red",
			"blue's end",
			LAG_MS,
		);

		// Removed by a recipient in the other database: gone for it when the remove answers.
		const removed = await call("DELETE", stickerPath(twin, "red", `?context=${putting.account}`), {
			secret: receiving.secret,
		});
		expect(removed.status, JSON.stringify(removed.body)).toBe(200);
		expect(removed.body).toEqual({ account: putting.account, ...summary("red") });
		expect(await onTwin(receiving.secret, twin)).toEqual({});
		expect(await listed(receiving.secret)).toEqual([]);
		expect(await recipientRows(receiving.account, putting.account, twin)).toEqual([]);
		expect(await outbox(putting.account)).toEqual([]);
		expectError(
			await call("DELETE", stickerPath(twin, "red", `?context=${putting.account}`), { secret: receiving.secret }),
			404,
			404102,
		);
	});

	it("is absent to its recipients at its validity_ts, and its copies end with it", async () => {
		const { putting, receiving, putter, twin } = await apart(putterOn, recipientOn);
		const validity = Date.now() / 1000 + 1.5;
		await putStickers(putter.secret, twin, { green: { recipients: [receiving.user], validity_ts: validity } });
		await until(
			() => onTwin(receiving.secret, twin),
			(accounts) => accounts[putting.account]?.green !== undefined,
			"the copy",
			LAG_MS,
		);
		await clockPast(validity);
		// At once, whether the expiry has run or not.
		expect(await onTwin(receiving.secret, twin)).toEqual({});
		expect(await listed(receiving.secret)).toEqual([]);
		expectError(
			await call("DELETE", stickerPath(twin, "green", `?context=${putting.account}`), { secret: receiving.secret }),
			404,
			404102,
		);
		// The expiry ends the copy through the outbox.
		await until(
			() => recipientRows(receiving.account, putting.account, twin),
			(rows) => rows.length === 0,
			"the copy's end",
			LAG_MS,
		);
		expect(await outbox(putting.account)).toEqual([]);
	});
});

describe("the outbox of copies", () => {
	it("keeps a copy it could not write, and writes it once when its timer comes again", async () => {
		const logged = loggedErrors();
		const { putting, receiving, putter, twin } = await apart("DB_0", "DB_1");
		// The recipients' database refuses the drain's batches: the put still answers, its copy waits.
		const undo = await objectEnv(putting.account, { DB_1: failingBatches(env.DB_1) });
		await putStickers(putter.secret, twin, { red: { recipients: [receiving.user] } });
		expect(await onTwin(receiving.secret, twin)).toEqual({});
		expect(await outbox(putting.account)).toEqual([{ change: "put", color: "red" }]);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("stickerCopies"));
		await undo();
		await fireAccountAlarm(putting.account);
		expect(Object.keys((await onTwin(receiving.secret, twin))[putting.account] ?? {})).toEqual(["red"]);
		expect(await outbox(putting.account)).toEqual([]);
	});

	it("lists nothing twice when a drain applied its rows but could not delete them", async () => {
		loggedErrors();
		const { putting, receiving, putter, twin } = await apart("DB_0", "DB_1");
		const undo = await objectEnv(putting.account, {
			DB_0: refusing(env.DB_0, /^delete from "sticker_copies"/i),
		});
		await putStickers(putter.secret, twin, { red: { recipients: [receiving.user, receiving.account] } });
		// Applied, and still in the outbox: the next drain applies it again.
		expect(Object.keys((await onTwin(receiving.secret, twin))[putting.account] ?? {})).toEqual(["red"]);
		expect(await outbox(putting.account)).toEqual([{ change: "put", color: "red" }]);
		await undo();
		await fireAccountAlarm(putting.account);
		await fireAccountAlarm(putting.account);
		expect(await outbox(putting.account)).toEqual([]);
		expect((await listed(receiving.secret)).map((s) => s.color)).toEqual(["red"]);
		expect(Object.keys((await onTwin(receiving.secret, twin))[putting.account] ?? {})).toEqual(["red"]);
		expect(await recipientRows(receiving.account, putting.account, twin)).toHaveLength(2);

		// An end after it leaves nothing, applied again or not.
		const removed = await call("DELETE", stickerPath(twin, "red", `?context=${putting.account}`), {
			secret: receiving.secret,
		});
		expect(removed.status).toBe(200);
		await fireAccountAlarm(putting.account);
		expect(await onTwin(receiving.secret, twin)).toEqual({});
		expect(await recipientRows(receiving.account, putting.account, twin)).toEqual([]);
	});
});

describe("who sees a sticker across databases", () => {
	it("answers a non-recipient as if there were no sticker, Server-Timing included", async () => {
		const { putting, receiving, putter, twin } = await apart("DB_0", "DB_1");
		const bare = await newTwin(receiving.secret);
		const outsider = await member(receiving, await role(receiving, seeing));
		await putStickers(putter.secret, twin, { red: { recipients: [receiving.user] } });
		await until(
			() => onTwin(receiving.secret, twin),
			(accounts) => accounts[putting.account]?.red !== undefined,
			"the copy",
			LAG_MS,
		);
		const swap = (text: string) => text.replaceAll(bare, twin);
		const query = `?context=${putting.account}`;
		for (const [method, path, absent] of [
			["GET", stickerPath(twin), stickerPath(bare)],
			["DELETE", stickerPath(twin, "red", query), stickerPath(bare, "red", query)],
		] as const) {
			const hidden = await call(method, path, { secret: outsider.secret });
			const none = await call(method, absent, { secret: outsider.secret });
			expect(fingerprint(hidden)).toEqual(fingerprint(none, swap));
		}
		expect(await onTwin(outsider.secret, twin)).toEqual({});
	});

	it("lists a sticker on a twin in another database only to a recipient that sees it, at the cost of none", async () => {
		const { putting, receiving, putter } = await apart("DB_0", "DB_1");
		const hidden = await newTwin(putting.secret, { kind: "hidden" });
		const open = await newTwin(putting.secret, { kind: "open" });
		const reader = await userWithRules(receiving, { twin: "TWIN.kind == 'open'" });
		const unaddressed = await userWithRules(receiving, { twin: "TWIN.kind == 'open'" });
		await putStickers(putter.secret, hidden, { red: { recipients: [reader.user] } });
		await until(
			() => recipientRows(receiving.account, putting.account, hidden),
			(rows) => rows.length === 1,
			"the copy",
			LAG_MS,
		);
		const seen = await call("GET", "/stickers?context=system", { secret: reader.secret });
		const none = await call("GET", "/stickers?context=system", { secret: unaddressed.secret });
		expect(seen.body.stickers).toEqual([]);
		expect(fingerprint(seen)).toEqual(fingerprint(none));
		expectError(await call("GET", stickerPath(hidden), { secret: reader.secret }), 404, 404102);

		await putStickers(putter.secret, open, { blue: { note: "n", recipients: [reader.user] } });
		const shown = await until(
			() => listed(reader.secret),
			(stickers) => stickers.length === 1,
			"the copy",
			LAG_MS,
		);
		expect(shown[0]).toMatchObject({ twin: open, account: putting.account, color: "blue", note: "n" });
		expect(Object.keys((await onTwin(reader.secret, open))[putting.account] ?? {})).toEqual(["blue"]);
	});
});

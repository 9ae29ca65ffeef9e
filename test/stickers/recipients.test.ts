import { env } from "cloudflare:workers";
import { idOf } from "../support/shards";
import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError, fingerprint } from "../support/requests";
import { bootstrap, member, role, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { putStickers, stickerPath } from "./helpers";

const allow = { effect: "deny" as const, actions: null };

describe("who sees a sticker", () => {
	it("get_stickers shows a recipient by user, role or account the stickers addressed to it, once each", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const colleague = await member(admin, admin.role);
		await putStickers(admin.secret, twin, {
			mine: { note: "to me", recipients: [admin.user] },
			"our-role": { recipients: [admin.role, admin.user] },
			"our-account": { recipients: [admin.account] },
			elsewhere: { recipients: [crypto.randomUUID()] },
		});
		const mine = await call("GET", stickerPath(twin), { secret: admin.secret });
		expect(mine.status).toBe(200);
		expect(Object.keys(mine.body.accounts)).toEqual([admin.account]);
		expect(Object.keys(mine.body.accounts[admin.account]).sort()).toEqual(["mine", "our-account", "our-role"]);
		expect(Object.keys(mine.body.accounts[admin.account].mine)).toEqual(["note", "validity_ts", "created_ts"]);
		expect(mine.body.accounts[admin.account].mine.note).toBe("to me");

		const theirs = await call("GET", stickerPath(twin), { secret: colleague.secret });
		expect(Object.keys(theirs.body.accounts[admin.account]).sort()).toEqual(["our-account", "our-role"]);
	});

	it("filters get_stickers by the context's accounts", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		const seer = await member(other, await role(other, allow, { twin: "true" }));
		await putStickers(seer.secret, twin, { blue: { recipients: [admin.account] } });
		await putStickers(admin.secret, twin, { red: { recipients: [admin.account] } });
		const read = async (context?: string) =>
			Object.keys(
				(
					await call("GET", stickerPath(twin, undefined, context ? `?context=${context}` : ""), {
						secret: admin.secret,
					})
				).body.accounts,
			).sort();
		expect(await read()).toEqual([admin.account, other.account].sort());
		expect(await read("system")).toEqual([admin.account, other.account].sort());
		expect(await read("personal")).toEqual([admin.account]);
		expect(await read(other.account)).toEqual([other.account]);
		expect(await read(`${other.account},${crypto.randomUUID()}`)).toEqual([other.account]);
		expectError(
			await call("GET", stickerPath(twin, undefined, "?context=nobody"), { secret: admin.secret }),
			400,
			400101,
		);
		expectError(await call("GET", stickerPath(twin, undefined, "?colour=red"), { secret: admin.secret }), 400, 400101);
	});

	it("answers a non-recipient exactly as if there were no sticker, Server-Timing included", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const bare = await newTwin(admin.secret);
		const outsider = await member(admin, await role(admin, allow));
		await putStickers(admin.secret, twin, { red: { recipients: [admin.user] } });
		const swap = (text: string) => text.replaceAll(bare, twin);
		for (const [method, query] of [
			["GET", ""],
			["DELETE", ""],
		] as const) {
			const path = method === "GET" ? stickerPath(twin) : stickerPath(twin, "red");
			const absent = method === "GET" ? stickerPath(bare) : stickerPath(bare, "red");
			const hidden = await call(method, path + query, { secret: outsider.secret });
			const none = await call(method, absent + query, { secret: outsider.secret });
			expect(fingerprint(hidden)).toEqual(fingerprint(none, swap));
		}
		// The sticker is still there for its recipient.
		expect(Object.keys((await call("GET", stickerPath(twin), { secret: admin.secret })).body.accounts)).toEqual([
			admin.account,
		]);
	});

	it("answers a reader that cannot see the twin as for an absent twin, on every sticker route", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { kind: "hidden" });
		const absent = idOf(twin);
		await putStickers(admin.secret, twin, { red: { recipients: [admin.account] } });
		const blind = await userWithRules(admin, { twin: "TWIN.kind != 'hidden'" });
		const body = { stickers: { red: { recipients: [blind.user] } } };
		for (const [method, tail, payload] of [
			["POST", "", body],
			["GET", "", undefined],
			["GET", "/red", undefined],
			["DELETE", "/red", undefined],
		] as const) {
			const hidden = await call(method, `/twins/${twin}/stickers${tail}`, { secret: blind.secret, body: payload });
			const none = await call(method, `/twins/${absent}/stickers${tail}`, { secret: blind.secret, body: payload });
			expectError(hidden, 404, 404102);
			expect(fingerprint(hidden)).toEqual(fingerprint(none));
		}
	});
});

describe("remove_sticker", () => {
	it("lets a recipient remove a sticker, answering it as it was; then it is gone", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const put = await putStickers(admin.secret, twin, { red: { note: "recalled", recipients: [admin.role] } });
		const removed = await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret });
		expect(removed.status).toBe(200);
		expect(removed.body).toEqual({
			account: admin.account,
			note: "recalled",
			validity_ts: put.red.validity_ts,
			created_ts: put.red.created_ts,
		});
		expect(Object.keys(removed.body)).toEqual(["account", "note", "validity_ts", "created_ts"]);
		expectError(await call("DELETE", stickerPath(twin, "red"), { secret: admin.secret }), 404, 404102);
		expectError(await call("GET", stickerPath(twin, "red"), { secret: admin.secret }), 404, 404102);
		// The color is free again.
		await putStickers(admin.secret, twin, { red: { recipients: [admin.user] } });
	});

	it("lets a recipient in another account remove the sticker by naming its account", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		const seer = await member(other, await role(other, allow, { twin: "true" }));
		await putStickers(admin.secret, twin, { red: { recipients: [other.account] } });
		// Not in the caller's own account: absent there.
		expectError(await call("DELETE", stickerPath(twin, "red"), { secret: seer.secret }), 404, 404102);
		const removed = await call("DELETE", stickerPath(twin, "red", `?context=${admin.account}`), {
			secret: seer.secret,
		});
		expect(removed.status).toBe(200);
		expect(removed.body.account).toBe(admin.account);
		expectError(await call("GET", stickerPath(twin, "red"), { secret: admin.secret }), 404, 404102);
	});

	it("refuses context=system and other bad queries with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const query of ["?context=system", "?context=nobody", "?context=personal&x=1"]) {
			expectError(await call("DELETE", stickerPath(twin, "red", query), { secret: admin.secret }), 400, 400101);
		}
	});

	it("lets no one but a recipient reach another account's object, whatever account it names", async () => {
		const admin = await bootstrap();
		const stranger = await bootstrap();
		const twin = await newTwin(admin.secret);
		const seeing = await role(stranger, allow, { twin: "true" });
		const [seer, peer] = [await member(stranger, seeing), await member(stranger, seeing)];
		await putStickers(admin.secret, twin, { red: { recipients: [admin.user, seer.user] } });
		// The objects the Worker calls, by name.
		const called: string[] = [];
		const ACCOUNTS = new Proxy(env.ACCOUNTS, {
			get: (target, property) =>
				property === "getByName"
					? (name: string) => {
							called.push(name);
							return target.getByName(name);
						}
					: Reflect.get(target, property, target),
		});
		// The peer sees the twin but is no recipient: refused in the Worker.
		expectError(
			await call("DELETE", stickerPath(twin, "red", `?context=${admin.account}`), {
				secret: peer.secret,
				env: { ACCOUNTS },
			}),
			404,
			404102,
		);
		expect(called).toEqual([]);
		expect(
			(
				await call("DELETE", stickerPath(twin, "red", `?context=${admin.account}`), {
					secret: seer.secret,
					env: { ACCOUNTS },
				})
			).status,
		).toBe(200);
		expect(called).toEqual([admin.account]);
	});

	it("costs a non-recipient what a missing sticker costs", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const outsider = await member(admin, await role(admin, allow));
		await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user, crypto.randomUUID(), crypto.randomUUID()] },
		});
		const hidden = await call("DELETE", stickerPath(twin, "red"), { secret: outsider.secret });
		const none = await call("DELETE", stickerPath(twin, "blue"), { secret: outsider.secret });
		expect(d1Cost(hidden, "rows_read")).toBe(d1Cost(none, "rows_read"));
		expect(fingerprint(hidden)).toEqual(fingerprint(none));
	});
});

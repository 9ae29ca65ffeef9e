import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, member, role, userWith } from "../support/accounts";
import { newTwin } from "../support/twins";
import { objectEnv } from "../support/objects";
import { putStickers, stickerPath } from "./helpers";

const YEAR = 31_536_000;

describe("put_sticker and get_sticker", () => {
	it("puts stickers with defaults, lowercased unique recipients, and answers the record in its order", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const other = crypto.randomUUID();
		const before = Date.now() / 1000;
		const stickers = await putStickers(admin.secret, twin, {
			red: { recipients: [admin.user, other.toUpperCase(), other, admin.user] },
			"Blue-2": {
				note: "inspect this",
				recipients: [admin.role],
				validity_ts: before + 600,
				publish: { on_put: "alerts", on_expire: ["a-1", "a-2", "a-1"] },
			},
		});
		expect(Object.keys(stickers)).toEqual(["red", "Blue-2"]);
		expect(Object.keys(stickers.red)).toEqual(["note", "recipients", "validity_ts", "created_ts", "publish"]);
		expect(stickers.red).toMatchObject({ note: null, recipients: [admin.user, other], publish: {} });
		expect(stickers.red.validity_ts).toBeCloseTo(stickers.red.created_ts + YEAR, 2);
		expect(stickers["Blue-2"]).toMatchObject({
			note: "inspect this",
			recipients: [admin.role],
			publish: { on_put: ["alerts"], on_expire: ["a-1", "a-2"] },
		});
		expect(stickers["Blue-2"].created_ts).toBe(stickers.red.created_ts);

		const got = await call("GET", stickerPath(twin, "Blue-2"), { secret: admin.secret });
		expect(got.status).toBe(200);
		expect(got.body).toEqual(stickers["Blue-2"]);
		// Any user of the account reads its stickers, recipient or not.
		const reader = await userWith(admin, { effect: "allow", actions: ["get_sticker"] });
		expect((await call("GET", stickerPath(twin, "red"), { secret: reader.secret })).body).toEqual(stickers.red);
		expectError(await call("GET", stickerPath(twin, "green"), { secret: admin.secret }), 404, 404102);
	});

	it("refuses a color the account has on the twin, writing nothing of the request", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await putStickers(admin.secret, twin, { red: { recipients: [admin.user] } });
		const again = await call("POST", stickerPath(twin), {
			secret: admin.secret,
			body: { stickers: { green: { recipients: [admin.user] }, red: { recipients: [admin.user] } } },
		});
		expectError(again, 409, 409101);
		expect(again.body.details).toEqual([{ path: "stickers.red", message: expect.any(String) }]);
		expectError(await call("GET", stickerPath(twin, "green"), { secret: admin.secret }), 404, 404102);
		// Another twin, or another account on the same twin, may use the color.
		await putStickers(admin.secret, await newTwin(admin.secret), { red: { recipients: [admin.user] } });
	});

	it("puts on a terminated twin, and on another account's twin the caller sees", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		await putStickers(admin.secret, twin, { red: { recipients: [admin.user] } });

		const owner = await bootstrap();
		const theirs = await newTwin(owner.secret);
		const seer = await member(admin, await role(admin, { effect: "deny", actions: null }, { twin: "true" }));
		await putStickers(seer.secret, theirs, { blue: { recipients: [owner.account] } });
		// The sticker is the putting account's: the twin's owner has none of that color.
		expectError(await call("GET", stickerPath(theirs, "blue"), { secret: owner.secret }), 404, 404102);
		expect((await call("GET", stickerPath(theirs, "blue"), { secret: seer.secret })).status).toBe(200);
	});

	it("refuses bad input with 400101, naming the field", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const now = Date.now() / 1000;
		const ok = { recipients: [admin.user] };
		const cases: [unknown, string][] = [
			[{ stickers: { re: ok } }, "stickers.re"],
			[{ stickers: { "red!": ok } }, "stickers.red!"],
			['{"stickers": {"__proto__": {"recipients": []}, "red": {"recipients": []}}}', "stickers.__proto__"],
			[{ stickers: {} }, "stickers"],
			[{ stickers: Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`color-${i}`, ok])) }, "stickers"],
			[{ stickers: { red: { recipients: [] } } }, "stickers.red.recipients"],
			[
				{ stickers: { red: { recipients: Array.from({ length: 101 }, () => crypto.randomUUID()) } } },
				"stickers.red.recipients",
			],
			[{ stickers: { red: { recipients: ["not-a-uuid"] } } }, "stickers.red.recipients.0"],
			[{ stickers: { red: { ...ok, note: "x".repeat(513) } } }, "stickers.red.note"],
			[{ stickers: { red: { ...ok, validity_ts: now - 1 } } }, "stickers.red.validity_ts"],
			[{ stickers: { red: { ...ok, validity_ts: now + YEAR + 60 } } }, "stickers.red.validity_ts"],
			[{ stickers: { red: { ...ok, publish: { on_change: "alerts" } } } }, "stickers.red.publish.on_change"],
			[{ stickers: { red: { ...ok, publish: { on_put: "a" } } } }, "stickers.red.publish.on_put"],
			[
				{ stickers: { red: { ...ok, publish: { on_put: Array.from({ length: 11 }, (_, i) => `topic-${i}`) } } } },
				"stickers.red.publish.on_put",
			],
			[{ stickers: { red: { ...ok, colour: "red" } } }, "stickers.red.colour"],
			[{ stickers: { red: ok }, extra: 1 }, "extra"],
		];
		for (const [body, path] of cases) {
			const res = await call("POST", stickerPath(twin), { secret: admin.secret, body });
			expectError(res, 400, 400101);
			expect(
				res.body.details.map((d: { path: string }) => d.path),
				JSON.stringify(body).slice(0, 80),
			).toContain(path);
		}
		// A bad color says what a color must be.
		const bad = await call("POST", stickerPath(twin), { secret: admin.secret, body: { stickers: { "red!": ok } } });
		expect(bad.body.details).toEqual([{ path: "stickers.red!", message: "Must be 3 to 48 letters, digits or '-'" }]);
		expectError(await call("GET", stickerPath(twin, "re"), { secret: admin.secret }), 400, 400101);
	});

	it("holds MAX_STICKERS unexpired stickers per account: one more is 409201 and writes nothing", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await objectEnv(admin.account, { MAX_STICKERS: "3" });
		await putStickers(admin.secret, twin, { one: { recipients: [admin.user] }, two: { recipients: [admin.user] } });
		const over = await call("POST", stickerPath(twin), {
			secret: admin.secret,
			body: { stickers: { three: { recipients: [admin.user] }, four: { recipients: [admin.user] } } },
		});
		expectError(over, 409, 409201);
		expect(over.body.description).toContain("MAX_STICKERS");
		expectError(await call("GET", stickerPath(twin, "three"), { secret: admin.secret }), 404, 404102);
		await putStickers(admin.secret, twin, { three: { recipients: [admin.user] } });
		// A removed sticker frees its place.
		expect((await call("DELETE", stickerPath(twin, "one"), { secret: admin.secret })).status).toBe(200);
		await putStickers(admin.secret, twin, { four: { recipients: [admin.user] } });
	});

	it("needs put_sticker and get_sticker in the statement", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const none = await userWith(admin, { effect: "deny", actions: ["put_sticker", "get_sticker"] });
		expectError(
			await call("POST", stickerPath(twin), {
				secret: none.secret,
				body: { stickers: { red: { recipients: [none.user] } } },
			}),
			403,
			403101,
		);
		expectError(await call("GET", stickerPath(twin, "red"), { secret: none.secret }), 403, 403101);
	});
});

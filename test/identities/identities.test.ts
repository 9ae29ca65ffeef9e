import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { attach, idPath, seedIdentities } from "./helpers";

// Of this file only: other files' accounts in the same database attach identities too, some
// of them public, and resolving in the system context reads every account's.
const RFID = `RFID#${crypto.randomUUID().slice(0, 8)}`;

describe("create, get, update and delete a twin identity", () => {
	it("attaches identities, answers each record, changes and detaches one", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const res = await call("POST", idPath(twin), {
			secret: admin.secret,
			body: { identities: { [RFID]: {}, "SN#42": { validity_ts: 4102444800, visibility: "USER.partner == true" } } },
		});
		expect(res.status).toBe(201);
		const created = res.body.identities[RFID].creation_certificate.created_ts;
		expect(res.body.identities).toEqual({
			[RFID]: {
				validity_ts: null,
				visibility: null,
				updated_ts: created,
				creation_certificate: { identity: RFID, creator: admin.account, created_ts: created },
			},
			"SN#42": {
				validity_ts: 4102444800,
				visibility: "USER.partner == true",
				updated_ts: created,
				creation_certificate: { identity: "SN#42", creator: admin.account, created_ts: created },
			},
		});

		expect((await call("GET", idPath(twin, RFID), { secret: admin.secret })).body).toEqual(res.body.identities[RFID]);

		const patched = await call("PATCH", idPath(twin, "SN#42"), { secret: admin.secret, body: { visibility: null } });
		expect(patched.status).toBe(200);
		expect(patched.body).toMatchObject({
			validity_ts: 4102444800,
			visibility: null,
			creation_certificate: { identity: "SN#42", created_ts: created },
		});
		expect(patched.body.updated_ts).toBeGreaterThanOrEqual(created);

		const deleted = await call("DELETE", idPath(twin, RFID), { secret: admin.secret });
		expect(deleted.status).toBe(200);
		expect(deleted.body).toEqual(res.body.identities[RFID]);
		expectError(await call("GET", idPath(twin, RFID), { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", idPath(twin, RFID), { secret: admin.secret }), 404, 404102);
		const listed = await call("GET", idPath(twin), { secret: admin.secret });
		expect(listed.body).toEqual({
			identities: { "SN#42": { validity_ts: 4102444800, created_ts: created, updated_ts: patched.body.updated_ts } },
		});
	});

	it.each([
		["a bad identity", { identities: { "RFID-1": {} } }, "identities.RFID-1"],
		["a prefix longer than 8", { identities: { "ABCDEFGHI#1": {} } }, "identities.ABCDEFGHI#1"],
		["no identity", { identities: {} }, "identities"],
		[
			"101 identities",
			{ identities: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`N#${i}`, {}])) },
			"identities",
		],
		["a negative validity", { identities: { [RFID]: { validity_ts: -1 } } }, `identities.${RFID}.validity_ts`],
		[
			"a malformed visibility",
			{ identities: { [RFID]: { visibility: "USER.a ==" } } },
			`identities.${RFID}.visibility`,
		],
		["an unknown field", { identities: { [RFID]: { owner: "me" } } }, `identities.${RFID}.owner`],
	])("refuses %s with 400", async (_case, body, path) => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const res = await call("POST", idPath(twin), { secret: admin.secret, body });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("names the rule's error position, and refuses an empty or unknown update", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { [RFID]: {} });
		const bad = await call("PATCH", idPath(twin, RFID), { secret: admin.secret, body: { visibility: "((" } });
		expectError(bad, 400, 400101);
		expect(bad.body.details[0]).toMatchObject({ path: "visibility", message: expect.stringMatching(/position \d+/) });
		expectError(await call("PATCH", idPath(twin, RFID), { secret: admin.secret, body: {} }), 400, 400101);
		expectError(
			await call("PATCH", idPath(twin, RFID), { secret: admin.secret, body: { identity: "x" } }),
			400,
			400101,
		);
		expectError(await call("GET", `/twins/${twin}/identities/RFID%2`, { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", `/twins/${twin}/identities/RFID`, { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", `${idPath(twin)}?show_expired=yes`, { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", `${idPath(twin)}?colour=red`, { secret: admin.secret }), 400, 400101);
	});

	it("decodes the path once: %2523 is the literal text %23, not '#'", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { "A#b": {} });
		expect((await call("GET", `/twins/${twin}/identities/A%23b`, { secret: admin.secret })).status).toBe(200);
		expectError(await call("GET", `/twins/${twin}/identities/A%2523b`, { secret: admin.secret }), 400, 400101);
	});

	it("says how to write '#' when a raw one cut the identity short in the path", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		// A raw '#' starts the URL's fragment: the service receives "RFID" alone.
		const res = await call("GET", `/twins/${twin}/identities/RFID#be744bdc0a3f`, { secret: admin.secret });
		expectError(res, 400, 400101);
		expect(res.body.details).toEqual([
			{ path: "identity", message: expect.stringContaining("in a path write '#' as %23") },
		]);
		const body = await call("POST", `/twins/${twin}/identities`, {
			secret: admin.secret,
			body: { identities: { RFID: {} } },
		});
		expect(body.body.details[0]).toEqual({
			path: "identities.RFID",
			message: expect.stringMatching(/^Must be a prefix of 1 to 8 letters/),
		});
	});

	it("is all or nothing: an identity the account already has is 409 and nothing is written", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { [RFID]: {} });
		const res = await call("POST", idPath(twin), {
			secret: admin.secret,
			body: { identities: { "SN#1": {}, [RFID]: {} } },
		});
		expectError(res, 409, 409101);
		expect(res.body.details).toEqual([{ path: `identities.${RFID}`, message: expect.any(String) }]);
		expectError(await call("GET", idPath(twin, "SN#1"), { secret: admin.secret }), 404, 404102);
	});

	it("holds at most 1000 identities per twin and account", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		await seedIdentities(
			admin.account,
			Array.from({ length: 999 }, (_, i) => ({ twin, identity: `N#${i}` })),
		);
		await attach(admin.secret, twin, { "N#last": {} });
		const res = await call("POST", idPath(twin), { secret: admin.secret, body: { identities: { "N#more": {} } } });
		expectError(res, 409, 409101);
		expect(res.body.description).toMatch(/1000/);
		// Another twin of the account is not affected.
		await attach(admin.secret, await newTwin(admin.secret), { "N#more": {} });
		// The identities of another account on other twins do not count either.
		await attach(other.secret, await newTwin(other.secret), { "N#more": {} });
		expect(Object.keys((await call("GET", idPath(twin), { secret: admin.secret })).body.identities)).toHaveLength(1000);
	});

	it("serializes concurrent creates of the same identity: exactly one wins", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const results = await Promise.all(
			Array.from({ length: 6 }, () =>
				call("POST", idPath(twin), { secret: admin.secret, body: { identities: { [RFID]: {} } } }),
			),
		);
		expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409, 409]);
	});
});

describe("expiry and terminated twins", () => {
	it("keeps an expired identity for its owner, listed only with show_expired", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, {
			"OLD#1": { validity_ts: 1 },
			"NEW#1": { validity_ts: null },
			"PRIV#1": {},
			"PUB#1": { visibility: "true" },
		});
		const list = async (query: string) =>
			Object.keys((await call("GET", `${idPath(twin)}?${query}`, { secret: admin.secret })).body.identities).sort();
		expect(await list("")).toEqual(["NEW#1", "PRIV#1", "PUB#1"]);
		expect(await list("show_expired=TRUE")).toEqual(["NEW#1", "OLD#1", "PRIV#1", "PUB#1"]);
		expect(await list("show_expired=1&show_valid=0")).toEqual(["OLD#1"]);
		expect(await list("show_public=false")).toEqual(["NEW#1", "PRIV#1"]);
		expect(await list("show_private=false")).toEqual(["PUB#1"]);
		expect(await list("show_personal=false")).toEqual([]);
		expect((await call("GET", idPath(twin, "OLD#1"), { secret: admin.secret })).body.validity_ts).toBe(1);
		// Renewing it brings it back.
		await call("PATCH", idPath(twin, "OLD#1"), { secret: admin.secret, body: { validity_ts: null } });
		expect(await list("")).toContain("OLD#1");
	});

	it("attaches identities to a terminated twin, by its owner and by another account that sees it", async () => {
		const owner = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(owner.secret, { open: true });
		expect((await call("DELETE", `/twins/${twin}`, { secret: owner.secret })).status).toBe(200);
		await attach(owner.secret, twin, { [RFID]: {} });
		const { secret: partner } = await userWithRules(other, { twin: "TWIN.open == true" });
		await attach(partner, twin, { [RFID]: {} });
		expect((await call("PATCH", idPath(twin, RFID), { secret: partner, body: { validity_ts: 5 } })).status).toBe(200);
		expect((await call("DELETE", idPath(twin, RFID), { secret: owner.secret })).status).toBe(200);
	});
});

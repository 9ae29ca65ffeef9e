import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError, fingerprint } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { attach, idPath } from "./helpers";

// Of this file only: other files' accounts in the same database attach identities too, some
// of them public, and resolving in the system context reads every account's.
const RFID = `RFID#${crypto.randomUUID().slice(0, 8)}`;

// Account A owns a twin marked shared; B and C see it through their roles' twin rules.
async function threeAccounts() {
	const [a, b, c] = [await bootstrap(), await bootstrap(), await bootstrap()];
	const twin = await newTwin(a.secret, { shared: true });
	const sees = { twin: "TWIN.shared == true", identity: "true" };
	const [bReader, cReader] = [
		await userWithRules(b, sees, { partner: true }),
		await userWithRules(c, sees, { partner: false }),
	];
	return { a, b, c, twin, bReader: bReader.secret, cReader: cReader.secret };
}

const foreignOf = async (secret: string, twin: string, query = "show_foreign=true") =>
	(await call("GET", `${idPath(twin)}?${query}`, { secret })).body.foreign;

describe("ownership", () => {
	it("lets two accounts attach the same identity to one twin; each changes only its own", async () => {
		const { a, b, twin, bReader } = await threeAccounts();
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		await attach(bReader, twin, { [RFID]: { validity_ts: null } });
		expect((await call("GET", idPath(twin, RFID), { secret: a.secret })).body.creation_certificate.creator).toBe(
			a.account,
		);
		expect((await call("GET", idPath(twin, RFID), { secret: bReader })).body.creation_certificate.creator).toBe(
			b.account,
		);

		// B's path names B's identity: deleting it leaves A's in place.
		expect((await call("DELETE", idPath(twin, RFID), { secret: bReader })).body.creation_certificate.creator).toBe(
			b.account,
		);
		expectError(await call("PATCH", idPath(twin, RFID), { secret: bReader, body: { validity_ts: 1 } }), 404, 404102);
		expectError(await call("DELETE", idPath(twin, RFID), { secret: bReader }), 404, 404102);
		expect((await call("GET", idPath(twin, RFID), { secret: a.secret })).body).toMatchObject({
			validity_ts: null,
			visibility: "true",
		});
		// A foreign identity is not B's to read one by one, only in lists and resolve.
		expectError(await call("GET", idPath(twin, RFID), { secret: bReader }), 404, 404102);
		expect(await foreignOf(bReader, twin)).toEqual({
			[a.account]: { [RFID]: expect.objectContaining({ validity_ts: null }) },
		});
	});

	it("answers 404 on every identity route of a twin the caller cannot see", async () => {
		const { a, b, twin } = await threeAccounts();
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		const attempts: [string, string, unknown?][] = [
			["POST", idPath(twin), { identities: { [RFID]: {} } }],
			["GET", idPath(twin)],
			["GET", idPath(twin, RFID)],
			["PATCH", idPath(twin, RFID), { validity_ts: 1 }],
			["DELETE", idPath(twin, RFID)],
		];
		for (const [method, path, body] of attempts)
			expectError(await call(method, path, { secret: b.secret, body }), 404, 404102);
		expect((await call("GET", idPath(twin, RFID), { secret: a.secret })).body.validity_ts).toBeNull();
	});
});

describe("visibility from three accounts", () => {
	it("shows a public identity to the readers its rule accepts, never a private or expired one", async () => {
		const { a, c, twin, bReader, cReader } = await threeAccounts();
		await attach(a.secret, twin, {
			[RFID]: { visibility: "USER.partner == true" },
			"SN#open": { visibility: "true" },
			"SN#private": {},
			"SN#expired": { visibility: "true", validity_ts: 1 },
			"SN#typed": { visibility: "identity =~ '^RFID#' or twin_status == 'terminated'" },
		});
		expect(Object.keys((await foreignOf(bReader, twin))[a.account]).sort()).toEqual([RFID, "SN#open"]);
		expect(Object.keys((await foreignOf(cReader, twin))[a.account]).sort()).toEqual(["SN#open"]);
		expect(await foreignOf(bReader, twin, `show_foreign=${a.account}`)).toEqual(await foreignOf(bReader, twin));
		expect(await foreignOf(bReader, twin, `show_foreign=${c.account}`)).toEqual({});
		expect(await foreignOf(bReader, twin, "show_foreign=false")).toBeUndefined();
		// The owner lists them as its personal identities, never as foreign.
		const own = await call("GET", `${idPath(twin)}?show_foreign=true`, { secret: a.secret });
		expect(Object.keys(own.body.identities).sort()).toEqual([RFID, "SN#open", "SN#private", "SN#typed"]);
		expect(own.body.foreign).toEqual({});
	});

	it("binds identity in the visibility rule to the identity itself", async () => {
		const { a, twin, bReader } = await threeAccounts();
		await attach(a.secret, twin, {
			"RFID#1": { visibility: "'RFID#' in identity" },
			"SN#1": { visibility: "'RFID#' in identity" },
		});
		expect(Object.keys((await foreignOf(bReader, twin))[a.account])).toEqual(["RFID#1"]);
	});
});

describe("the role's identity rule", () => {
	it("null: the account's own identities only, none of another account even when public", async () => {
		const { a, b, twin } = await threeAccounts();
		const { secret: nullRule } = await userWithRules(b, { twin: "TWIN.shared == true", identity: null });
		await attach(a.secret, twin, { [RFID]: { visibility: "true" } });
		await attach(nullRule, twin, { "SN#b": {} });
		const res = await call("GET", `${idPath(twin)}?show_foreign=true`, { secret: nullRule });
		expect(res.body).toEqual({ identities: { "SN#b": expect.any(Object) }, foreign: {} });
		expect(b.account).not.toBe(a.account);
	});

	it("a rule: only the items it accepts, the account's own included", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { "RFID#1": {}, "SN#1": {} });
		const { secret: rfidOnly } = await userWithRules(admin, { identity: "'RFID#' in identity" });
		const listed = await call("GET", idPath(twin), { secret: rfidOnly });
		expect(Object.keys(listed.body.identities)).toEqual(["RFID#1"]);
		expect((await call("GET", idPath(twin, "RFID#1"), { secret: rfidOnly })).status).toBe(200);
		expectError(await call("GET", idPath(twin, "SN#1"), { secret: rfidOnly }), 404, 404102);
		expectError(await call("PATCH", idPath(twin, "SN#1"), { secret: rfidOnly, body: { validity_ts: 1 } }), 404, 404102);
		expectError(await call("DELETE", idPath(twin, "SN#1"), { secret: rfidOnly }), 404, 404102);
		expect((await call("GET", idPath(twin, "SN#1"), { secret: admin.secret })).body.validity_ts).toBeNull();
	});
});

describe("an invisible identity answers exactly as an absent one", () => {
	async function compare(secret: string, hidden: string, absent: string, twin: string) {
		for (const [method, body] of [["GET"], ["PATCH", { validity_ts: 1 }], ["DELETE"]] as const) {
			const a = await call(method, idPath(twin, hidden), { secret, body });
			const b = await call(method, idPath(twin, absent), { secret, body });
			expectError(a, 404, 404102);
			expect(fingerprint(a)).toEqual(fingerprint(b));
		}
	}

	it("hidden by the caller's identity rule: same status, body and headers, Server-Timing included", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { "SN#1": {} });
		await compare((await userWithRules(admin, { identity: "'RFID#' in identity" })).secret, "SN#1", "SN#2", twin);
	});

	it("another account's identity, public or private, is absent for the caller's path", async () => {
		const { a, twin, bReader } = await threeAccounts();
		await attach(a.secret, twin, { "SN#1": { visibility: "true" }, "SN#2": {} });
		await compare(bReader, "SN#1", "SN#3", twin);
		await compare(bReader, "SN#2", "SN#3", twin);
	});
});

describe("other accounts' private identities", () => {
	it("are never read: lists and resolve cost the same with or without them", async () => {
		const { a, twin, bReader } = await threeAccounts();
		await attach(a.secret, twin, { "RFID#open": { visibility: "true" } });
		const cost = async () => {
			const listed = await call("GET", `${idPath(twin)}?show_foreign=true`, { secret: bReader });
			const resolved = await call("GET", `/resolve/${encodeURIComponent("RFID#private")}?context=system`, {
				secret: bReader,
			});
			expect(Object.keys(listed.body.foreign[a.account])).toEqual(["RFID#open"]);
			expect(resolved.body.twins).toEqual([]);
			return [d1Cost(listed, "rows_read"), d1Cost(resolved, "rows_read")];
		};
		const before = await cost();
		await attach(a.secret, twin, Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`RFID#p${i}`, {}])));
		await attach(a.secret, twin, { "RFID#private": {} });
		expect(await cost()).toEqual(before);
	});
});

// Server-Timing must not count what the caller cannot see. Each read is measured
// before and after hidden identities are added, next to a visible one (so each hidden row's
// cost is taken out exactly) and alone (so a range that finds only hidden rows costs nothing).
// A public identity of another account that sorts right after them is there from the start,
// as a neighbour nearly always is: an index lookup reads one entry past its range.
describe("lists and resolve cost the same with or without identities the caller cannot see", () => {
	const read = (secret: string, paths: string[]) =>
		Promise.all(
			paths.map(async (path) => {
				const res = await call("GET", path, { secret });
				expect(res.status).toBe(200);
				return fingerprint(res);
			}),
		);
	const resolvePath = (identity: string, context: string) =>
		`/resolve/${encodeURIComponent(identity)}?context=${context}`;

	async function unchangedBy(hide: () => Promise<unknown>, look: () => Promise<unknown>) {
		const before = await look();
		await hide();
		expect(await look()).toEqual(before);
	}

	it("another account's: its visibility rule is false for the reader, or it expired", async () => {
		for (const alongside of [false, true]) {
			const { a, c, twin, bReader } = await threeAccounts();
			await attach(c.secret, await newTwin(c.secret), { "RFID#x0": { visibility: "true" } });
			if (alongside) await attach(a.secret, twin, { "RFID#x": { visibility: "true" } });
			const lists = [`${idPath(twin)}?show_foreign=true`, `${idPath(twin)}?show_foreign=${a.account}`];
			const paths = [...lists, resolvePath("RFID#x", "system"), resolvePath("RFID#x", a.account)];
			const look = () => read(bReader, paths);
			await unchangedBy(() => attach(a.secret, twin, { "RFID#v": { visibility: "USER.partner == false" } }), look);
			await unchangedBy(() => attach(a.secret, twin, { "RFID#u": { visibility: "true", validity_ts: 1 } }), look);
			await unchangedBy(
				async () =>
					attach(a.secret, await newTwin(a.secret, { shared: true }), {
						"RFID#x": { visibility: "USER.partner == false" },
					}),
				look,
			);
			await unchangedBy(
				async () =>
					attach(a.secret, await newTwin(a.secret, { shared: true }), {
						"RFID#x": { visibility: "true", validity_ts: 1 },
					}),
				look,
			);
		}
	});

	it("the reader's own account's, hidden by the role's identity rule", async () => {
		for (const alongside of [false, true]) {
			const { a, c } = await threeAccounts();
			const twin = await newTwin(a.secret, { open: true });
			const { secret: reader } = await userWithRules(a, { identity: "'RFID#' in identity and TWIN.open == true" });
			await attach(c.secret, await newTwin(c.secret), { "RFID#10": { visibility: "true" } });
			if (alongside) await attach(a.secret, twin, { "RFID#1": {} });
			const paths = [
				idPath(twin),
				`${idPath(twin)}?show_foreign=true`,
				resolvePath("RFID#1", "personal"),
				resolvePath("RFID#1", "system"),
			];
			const look = () => read(reader, paths);
			await unchangedBy(() => attach(a.secret, twin, { "SN#1": {} }), look);
			// Public, it is also among the rows the foreign list scans.
			await unchangedBy(() => attach(a.secret, twin, { "SN#2": { visibility: "true" } }), look);
			await unchangedBy(
				async () => attach(a.secret, await newTwin(a.secret), { "RFID#1": { visibility: "true" } }),
				look,
			);
		}
	});
});

import { describe, expect, it } from "vitest";
import { idOf } from "../support/shards";
import { call, expectError, fingerprint } from "../support/requests";
import { bootstrap, member, role } from "../support/accounts";
import { scan, seedTwins, walk } from "../support/twins";

// DICT: the request's dictionary, from the X-TrustedTwin header or a token's secret_dict, read
// by every rule like USER and compiled into scan SQL.

const header = (dict: unknown, alphabet: "standard" | "url" = "standard") => {
	const text = btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(dict))));
	return alphabet === "url" ? text.replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "") : text;
};
const withDict = (secret: string, dict: unknown, alphabet?: "standard" | "url") => ({
	secret,
	headers: { "x-trustedtwin": header(dict, alphabet) },
});

// A reader whose role sees the twins whose serial the request's dictionary names.
async function serialReader() {
	const admin = await bootstrap();
	const reader = await member(
		admin,
		await role(admin, { effect: "deny", actions: [] }, { twin: "TWIN.serial == DICT.serial" }),
	);
	const [north, south] = await seedTwins(admin.account, [{ serial: "N-1" }, { serial: "S-2" }]);
	return { admin, reader, north: north!, south: south! };
}

describe("the X-TrustedTwin header", () => {
	it("is DICT in a role's twin rule: a twin shows with its serial, and answers as absent without", async () => {
		const { reader, north, south } = await serialReader();
		expect((await call("GET", `/twins/${north}`, withDict(reader.secret, { serial: "N-1" }))).status).toBe(200);
		expect((await call("GET", `/twins/${north}`, withDict(reader.secret, { serial: "N-1" }, "url"))).status).toBe(200);
		const hidden = await call("GET", `/twins/${south}`, withDict(reader.secret, { serial: "N-1" }));
		const absent = await call("GET", `/twins/${idOf(south)}`, withDict(reader.secret, { serial: "N-1" }));
		expectError(hidden, 404, 404102);
		expect(fingerprint(hidden, (text) => text.replaceAll(south, "ID"))).toEqual(
			fingerprint(absent, (text) => text.replace(/[0-9a-f-]{36}/, "ID")),
		);
		// Without the header DICT is null: the rule holds for no twin.
		expectError(await call("GET", `/twins/${north}`, { secret: reader.secret }), 404, 404102);
	});

	it("is compiled into scan SQL and read by match", async () => {
		const { admin, reader, north } = await serialReader();
		const page = await call("GET", "/twins?details=true", withDict(reader.secret, { serial: "N-1" }));
		expect(page.body.twins.map((t: { uuid: string }) => t.uuid)).toEqual([north]);
		// Twice: the second page request may take the object's credential check.
		const again = await call("GET", "/twins?details=true", withDict(reader.secret, { serial: "S-2" }));
		expect(again.body.twins.map((t: { description: unknown }) => t.description)).toEqual([{ serial: "S-2" }]);
		const matched = await call(
			"GET",
			`/twins?match=${encodeURIComponent("TWIN.serial == DICT.want")}`,
			withDict(admin.secret, { want: "N-1" }),
		);
		expect(matched.body.twins).toEqual([north]);
		expect((await walk(admin.secret, "count=1")).seen).toHaveLength(2);
		expect((await scan(admin.secret, "details=true")).body.twins).toHaveLength(2);
	});

	it("refuses a header it cannot read with 400101 on X-TrustedTwin, after the credential and the statement", async () => {
		const { admin } = await serialReader();
		for (const value of [
			"not base64!",
			btoa("[1,2]"),
			btoa("null"),
			btoa("{bad json"),
			btoa(JSON.stringify({ x: "y".repeat(4000) })),
		]) {
			const res = await call("GET", "/whoami", { secret: admin.secret, headers: { "x-trustedtwin": value } });
			expectError(res, 400, 400101);
			expect(res.body.details[0].path).toBe("X-TrustedTwin");
		}
		expectError(await call("GET", "/whoami", { headers: { "x-trustedtwin": "bad!" } }), 401, 401101);
		const denied = await member(admin, await role(admin, { effect: "deny", actions: ["who_am_i"] }));
		expectError(
			await call("GET", "/whoami", { secret: denied.secret, headers: { "x-trustedtwin": "bad!" } }),
			403,
			403101,
		);
	});
});

describe("DICT in entry rules", () => {
	it("is the writer's in conditions and the reader's in an entry's visibility", async () => {
		const admin = await bootstrap();
		const twin = (await call("POST", "/twins", { secret: admin.secret, body: {} })).body.uuid as string;
		const path = `/twins/${twin}/ledgers/personal`;
		const entries = { level: { value: 5, visibility: "DICT.badge == 'inspector'" } };
		expect((await call("POST", path, { secret: admin.secret, body: { entries } })).status).toBe(201);
		const update = { entries: { level: { value: 6 } }, conditions: { level: "entry_value == DICT.expect" } };
		expectError(await call("PATCH", path, { ...withDict(admin.secret, { expect: 4 }), body: update }), 409, 409102);
		expect((await call("PATCH", path, { ...withDict(admin.secret, { expect: 5 }), body: update })).status).toBe(200);

		// Another account sees the twin; the entry shows only to a reader whose request says so.
		const other = await bootstrap();
		const reader = await member(
			other,
			await role(other, { effect: "deny", actions: [] }, { twin: "true", entry: "true" }),
		);
		const foreign = `/twins/${twin}/ledgers/${admin.account}/value`;
		expect((await call("GET", foreign, withDict(reader.secret, { badge: "inspector" }))).body.entries.level.value).toBe(
			6,
		);
		expect((await call("GET", foreign, withDict(reader.secret, { badge: "visitor" }))).body.entries).toEqual({});
	});
});

describe("a token's dictionary", () => {
	it("is DICT, whatever header the request carries, and {} for a token without one", async () => {
		const { reader, north } = await serialReader();
		const made = await call("POST", "/token", { secret: reader.secret, body: { secret_dict: { serial: "N-1" } } });
		expect(made.status).toBe(201);
		expect((await call("GET", `/twins/${north}`, { secret: made.body.token })).status).toBe(200);
		expect((await call("GET", `/twins/${north}`, withDict(made.body.token, { serial: "S-2" }))).status).toBe(200);
		expect(
			(await call("GET", "/whoami", { secret: made.body.token, headers: { "x-trustedtwin": "bad!" } })).status,
		).toBe(200);
		const bare = await call("POST", "/token", { secret: reader.secret, body: {} });
		const trace = await call("POST", "/trace", { secret: bare.body.token });
		expect(trace.body.dict).toEqual({});
	});
});

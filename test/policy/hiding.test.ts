import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap, issueSecret, member, role } from "../support/accounts";

// What a caller may not see must not show through: not in a scan's match, not in a header.

const everything = { effect: "deny" as const, actions: null };

async function confinedWith(twinRule: string) {
	const admin = await bootstrap();
	const confined = await member(admin, await role(admin, everything, { twin: twinRule }), { company: "a" });
	const twin = async (description: Record<string, unknown>) =>
		(await call("POST", "/twins", { secret: admin.secret, body: { description } })).body.uuid as string;
	return {
		admin,
		confined,
		hidden: await twin({ company: "b", code: "secret" }),
		shown: await twin({ company: "a", code: "shown" }),
	};
}

const scan = async (secret: string, query: Record<string, string>) =>
	(await call("GET", `/twins?${new URLSearchParams(query)}`, { secret })).body.twins as unknown[];

describe("scan_twins' match", () => {
	// The first rule compiles to SQL; the second holds a regular expression, which the
	// evaluator decides.
	for (const twinRule of ["TWIN.company == USER.company", "TWIN.company =~ '^a$'"]) {
		it(`never matches a twin hidden by the rule ${twinRule}`, async () => {
			const { confined, hidden, shown } = await confinedWith(twinRule);
			expect(await scan(confined.secret, {})).toEqual(expect.arrayContaining([hidden, shown]));
			for (const details of ["false", "true"]) {
				for (const match of [`twin == '${hidden}'`, `twin == '${hidden}' and TWIN.code =~ '^s'`, "true"]) {
					expect(await scan(confined.secret, { match, details })).not.toContainEqual(hidden);
					expect(JSON.stringify(await scan(confined.secret, { match, details }))).not.toContain(hidden);
				}
				const found = await scan(confined.secret, { match: `twin == '${shown}' and TWIN.code =~ '^s'`, details });
				expect(found).toHaveLength(1);
			}
		});
	}
});

// Server-Timing without the time, which varies from call to call anyway.
const figures = (res: { headers: Headers }) => res.headers.get("server-timing")?.replace(/dur=[\d.]+/, "dur");

describe("answers for the invisible and the absent", () => {
	it("are identical, Server-Timing included, for another account's twins, users, roles and secrets", async () => {
		const caller = await bootstrap();
		const other = await bootstrap();
		const otherUser = (await member(other, other.role)).user;
		await issueSecret(other, otherUser);
		const otherTwin = (await call("POST", "/twins", { secret: other.secret, body: {} })).body.uuid;
		const absent = crypto.randomUUID();
		const cases: [string, (id: string) => string, unknown, string][] = [
			["GET", (id) => `/twins/${id}`, undefined, otherTwin],
			["PATCH", (id) => `/twins/${id}`, { description: {} }, otherTwin],
			["DELETE", (id) => `/twins/${id}`, undefined, otherTwin],
			["GET", (id) => `/users/${id}`, undefined, otherUser],
			["PATCH", (id) => `/users/${id}`, { name: "x" }, otherUser],
			["DELETE", (id) => `/users/${id}`, undefined, otherUser],
			["POST", (id) => `/users/${id}/secrets`, {}, otherUser],
			["GET", (id) => `/users/${id}/secrets`, undefined, otherUser],
			["PATCH", (id) => `/users/${id}/secrets`, { validity_ts: null }, otherUser],
			["DELETE", (id) => `/users/${id}/secrets`, undefined, otherUser],
			["GET", (id) => `/roles/${id}`, undefined, other.role],
			["PATCH", (id) => `/roles/${id}`, { name: "xx" }, other.role],
			["DELETE", (id) => `/roles/${id}`, undefined, other.role],
		];
		for (const [method, path, body, existing] of cases) {
			const invisible = await call(method, path(existing), { secret: caller.secret, body });
			const missing = await call(method, path(absent), { secret: caller.secret, body });
			expect([method, path(""), invisible.status, invisible.body.subcode]).toEqual([method, path(""), 404, 404102]);
			expect([method, path(""), figures(invisible)]).toEqual([method, path(""), figures(missing)]);
			expect(invisible.body.description).toBe(missing.body.description);
		}
	});

	it("are identical for a twin of the caller's account that its rule hides", async () => {
		const { confined, hidden } = await confinedWith("TWIN.company == USER.company");
		const absent = crypto.randomUUID();
		for (const [method, body] of [["GET"], ["PATCH", { description: {} }], ["DELETE"]] as const) {
			const invisible = await call(method, `/twins/${hidden}`, { secret: confined.secret, body });
			const missing = await call(method, `/twins/${absent}`, { secret: confined.secret, body });
			expect(invisible.status).toBe(404);
			expect(figures(invisible)).toBe(figures(missing));
		}
	});
});

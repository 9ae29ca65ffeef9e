import { describe, expect, it } from "vitest";
import { bootstrap, call, createUser, expectError, issueSecret } from "./helpers";

describe("tenant isolation of users and secrets", () => {
	it("answers 404 to a second account's admin for every user and secret route of the first", async () => {
		const first = await bootstrap();
		const second = await bootstrap();
		const user = await createUser(first);
		const secret = await issueSecret(first, user);

		const attempts: [string, string, unknown?][] = [
			["GET", `/users/${user}`],
			["PATCH", `/users/${user}`, { name: "stolen" }],
			["DELETE", `/users/${user}`],
			["POST", `/users/${user}/secrets`, {}],
			["GET", `/users/${user}/secrets`],
			["PATCH", `/users/${user}/secrets`, { validity_ts: null }],
			["DELETE", `/users/${user}/secrets`],
			["GET", `/users/${first.user}/secrets`],
		];
		for (const [method, path, body] of attempts) {
			const res = await call(method, path, { secret: second.secret, body });
			expectError(res, 404, 404102);
			expect(JSON.stringify(res.body)).not.toContain(first.account);
		}

		const listed = await call("GET", "/users", { secret: second.secret });
		expect(Object.keys(listed.body.users)).toEqual([second.user]);

		const borrowRole = await call("POST", "/users", { secret: second.secret, body: { name: "x", role: first.role } });
		expectError(borrowRole, 404, 404102);

		// The first account is untouched.
		expect((await call("GET", "/whoami", { secret })).body.account).toBe(first.account);
		expect((await call("GET", `/users/${user}`, { secret: first.secret })).body.name).toBe("someone");
	});
});

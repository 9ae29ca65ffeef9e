import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { dbOf } from "../support/shards";

const admin = () => ({ authorization: `Bearer ${env.ADMIN_TOKEN}` });

describe("create_account", () => {
	it("creates the account, an Administrator role with the default statement, and a user with a secret", async () => {
		const res = await call("POST", "/admin/accounts", { headers: admin(), body: { name: "Founder" } });
		expect(res.status).toBe(201);
		expect(Object.keys(res.body).sort()).toEqual(["account", "role", "secret", "user"]);

		const role = await dbOf(res.body.account).prepare("SELECT * FROM roles WHERE uuid = ?").bind(res.body.role).first();
		expect(role).toMatchObject({ account: res.body.account, name: "Administrator" });
		expect(JSON.parse(String(role?.statement))).toEqual({ effect: "deny", actions: null });

		const me = await call("GET", `/users/${res.body.user}`, { secret: res.body.secret });
		expect(me.body).toMatchObject({ name: "Founder", role: res.body.role, account: res.body.account });
	});

	it("validates its optional body", async () => {
		const res = await call("POST", "/admin/accounts", { headers: admin(), body: { name: "", plan: "gold" } });
		expectError(res, 400, 400101);
		expect(res.body.details.map((d: { path: string }) => d.path).sort()).toEqual(["name", "plan"]);
	});
});

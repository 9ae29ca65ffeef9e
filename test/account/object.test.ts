import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { AccountDO } from "../../src/objects";
import { call } from "../support/requests";
import { bootstrap, createUser, insertRole } from "../support/accounts";

describe("AccountDO", () => {
	it("is where role writes happen: each leaves a line in the account's journal", async () => {
		const admin = await bootstrap();
		const role = (await call("POST", "/roles", { secret: admin.secret, body: { name: "Journaled" } })).body;
		const user = await createUser(admin, role.uuid);
		await call("PATCH", `/roles/${role.uuid}`, { secret: admin.secret, body: { name: "Renamed" } });

		const stub = env.ACCOUNTS.getByName(admin.account);
		const journal = await runInDurableObject(stub, (instance: AccountDO) => instance.journal());
		expect(journal.map((j) => [j.action, j.target, j.actor])).toEqual([
			["update_user_role", role.uuid, admin.user],
			["create_user", user, admin.user],
			["create_user_role", role.uuid, admin.user],
		]);
		// Another account's object saw none of it.
		const other = env.ACCOUNTS.getByName(crypto.randomUUID());
		expect(await runInDurableObject(other, (instance: AccountDO) => instance.journal())).toEqual([]);
	});

	it("applies the no-escalation rule itself, not only the Worker", async () => {
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		const narrow = await stub.createRole(
			{ account: admin.account, user: admin.user },
			{
				name: "Narrow",
				rules: { twin: null, entry: null, identity: null },
				statement: { effect: "allow", actions: ["create_user_role"] },
			},
		);
		expect(narrow.ok).toBe(true);
		const holder = await createUser(admin, narrow.ok ? narrow.value.uuid : "");
		const attempt = await stub.createRole(
			{ account: admin.account, user: holder },
			{
				name: "Wide",
				rules: { twin: null, entry: null, identity: null },
				statement: { effect: "deny", actions: null },
			},
		);
		expect(attempt).toMatchObject({ ok: false, code: "escalation" });
	});

	it("checks user deletion, PIN issuance and another user's secret itself, in the write's own step", async () => {
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		const actions = ["delete_user", "create_user_secret_pin", "update_user_secret", "delete_user_secret"];
		const weak = await createUser(admin, await insertRole(admin.account, { effect: "allow", actions }));
		const caller = { account: admin.account, user: weak };
		const pin = { hash: "x".repeat(64), secret_validity_ts: null, expires_ts: 1e10, created_ts: 1 };
		expect(await stub.deleteUser(caller, admin.user)).toMatchObject({ ok: false, code: "escalation" });
		expect(await stub.issuePin(caller, admin.user, pin)).toMatchObject({ ok: false, code: "escalation" });
		expect(await stub.changeSecretValidity(caller, admin.user, 1)).toMatchObject({ ok: false, code: "escalation" });
		expect(await stub.removeSecret(caller, admin.user)).toMatchObject({ ok: false, code: "escalation" });
		expect((await call("GET", "/whoami", { secret: admin.secret })).status).toBe(200);
	});

	it("checks the caller's statement again in the write's own step: a role narrowed meanwhile counts", async () => {
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		// The Worker let these requests through; the role lost the actions before their turn came.
		const narrowed = await createUser(
			admin,
			await insertRole(admin.account, { effect: "allow", actions: ["who_am_i"] }),
		);
		const caller = { account: admin.account, user: narrowed };
		const role = {
			name: "Any",
			rules: { twin: null, entry: null, identity: null },
			statement: { effect: "allow" as const, actions: [] },
		};
		expect(await stub.createRole(caller, role)).toMatchObject({ ok: false, code: "operation_forbidden" });
		expect(
			await stub.createIdentities(
				caller,
				{ uuid: crypto.randomUUID(), owner: admin.account, status: "alive", description: {} },
				{ identities: { "RFID#1": {} } } as never,
			),
		).toMatchObject({ ok: false, code: "operation_forbidden" });
		expect((await stub.journal()).filter((line) => line.actor === narrowed)).toEqual([]);
	});

	it("refuses a caller that is not a user of the account", async () => {
		const admin = await bootstrap();
		const stub = env.ACCOUNTS.getByName(admin.account);
		const outcome = await stub.createRole(
			{ account: admin.account, user: crypto.randomUUID() },
			{
				name: "Ghost",
				rules: { twin: null, entry: null, identity: null },
				statement: { effect: "deny", actions: null },
			},
		);
		expect(outcome).toMatchObject({ ok: false, code: "unknown_credential" });
	});
});

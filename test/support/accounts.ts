// Accounts, users and roles: an account made through the admin route, users with the role or the
// rules a test needs and a working secret, roles made through the API or written straight into D1.
import { dbOf, idOf } from "./shards";
import { homeOf } from "../../src/db/shards";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "./requests";

export type Account = { account: string; user: string; role: string; secret: string };
export type Statement = { effect: "allow" | "deny"; actions: string[] | null };
export type Rules = { twin?: string | null; entry?: string | null; identity?: string | null };

export async function bootstrap(): Promise<Account> {
	const res = await call("POST", "/admin/accounts", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
	expect(res.status).toBe(201);
	return res.body;
}

export async function issueSecret(admin: Account, user: string, validity_ts?: number | null) {
	const pin = await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: { validity_ts } });
	expect(pin.status).toBe(201);
	const redeemed = await call("POST", `/secrets/${admin.account}/${pin.body.pin}`);
	expect(redeemed.status).toBe(201);
	return redeemed.body.secret as string;
}

export async function createUser(admin: Account, role = admin.role, name = "someone") {
	const res = await call("POST", "/users", { secret: admin.secret, body: { name, role } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A role written straight into D1, past the API: no grant check, no journal line in the
// account's object. For tests that need a role whose making is not what they test.
export async function insertRole(account: string, statement: Statement) {
	const uuid = idOf(account);
	await dbOf(account)
		.prepare(
			"INSERT INTO roles (uuid, account, name, rules, statement, created_ts, updated_ts) VALUES (?, ?, ?, ?, ?, 0, 0)",
		)
		.bind(
			uuid,
			account,
			"test role",
			JSON.stringify({ twin: null, entry: null, identity: null }),
			JSON.stringify(statement),
		)
		.run();
	return uuid;
}

// A user with the given statement and a working secret.
export async function userWith(admin: Account, statement: Statement): Promise<Account> {
	const role = await insertRole(admin.account, statement);
	const user = await createUser(admin, role);
	return { ...admin, user, role, secret: await issueSecret(admin, user) };
}

// A role made through the API by `admin`, so every grant check applies to it.
export async function role(admin: Account, statement: Statement, rules: Rules = {}, name = "Some role") {
	const res = await call("POST", "/roles", { secret: admin.secret, body: { name, statement, rules } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A user of `admin`'s account with the given role and description, and a working secret.
export async function member(
	admin: Account,
	roleUuid: string,
	description: Record<string, unknown> = {},
): Promise<Account> {
	const res = await call("POST", "/users", {
		secret: admin.secret,
		body: { name: "member", role: roleUuid, description },
	});
	expect(res.status).toBe(201);
	const user = res.body.uuid as string;
	return { ...admin, user, role: roleUuid, secret: await issueSecret(admin, user) };
}

// A user of `admin`'s account holding a new role with these rules and the default statement
// (the administrator may grant any rules), with a working secret.
export async function userWithRules(
	admin: Account,
	rules: Rules,
	description: Record<string, unknown> = {},
): Promise<Account> {
	const made = await call("POST", "/roles", { secret: admin.secret, body: { name: "Rule holder", rules } });
	expect(made.status).toBe(201);
	const user = await call("POST", "/users", {
		secret: admin.secret,
		body: { name: "reader", role: made.body.uuid, description },
	});
	expect(user.status).toBe(201);
	return {
		...admin,
		user: user.body.uuid as string,
		role: made.body.uuid as string,
		secret: await issueSecret(admin, user.body.uuid),
	};
}

// An account placed on one database: NEW_ACCOUNTS names the only binding create_account may put
// it on, as an operator would to stop a full database taking accounts (docs/scaling.md).
export async function bootstrapOn(binding: string): Promise<Account> {
	const res = await call("POST", "/admin/accounts", {
		headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` },
		env: { NEW_ACCOUNTS: binding },
	});
	expect(res.status).toBe(201);
	expect(homeOf(env, res.body.account)).toBe(binding);
	return res.body;
}

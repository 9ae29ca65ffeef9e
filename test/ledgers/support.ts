import { expect } from "vitest";
import { type Account, call, issueSecret } from "../helpers";

export async function newTwin(secret: string, description: Record<string, unknown> = {}) {
	const res = await call("POST", "/twins", { secret, body: { description } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A user of `admin`'s account holding a new role with these rules (the administrator may
// grant any rules), with a working secret.
export async function userWithRules(admin: Account, rules: { twin?: string | null; entry?: string | null }, description = {}) {
	const role = await call("POST", "/roles", { secret: admin.secret, body: { name: "Rule holder", rules } });
	expect(role.status).toBe(201);
	const user = await call("POST", "/users", { secret: admin.secret, body: { name: "reader", role: role.body.uuid, description } });
	expect(user.status).toBe(201);
	return { ...admin, user: user.body.uuid as string, role: role.body.uuid as string, secret: await issueSecret(admin, user.body.uuid) };
}

export function ledger(twin: string, which = "personal", tail = "") {
	return `/twins/${twin}/ledgers/${which}${tail}`;
}

export async function addEntries(secret: string, twin: string, entries: Record<string, unknown>) {
	const res = await call("POST", ledger(twin), { secret, body: { entries } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.entries;
}

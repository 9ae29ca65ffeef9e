import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { type Account, call, issueSecret } from "../helpers";

export const idPath = (twin: string, identity?: string) =>
	`/twins/${twin}/identities${identity === undefined ? "" : `/${encodeURIComponent(identity)}`}`;

export async function newTwin(secret: string, description: Record<string, unknown> = {}) {
	const res = await call("POST", "/twins", { secret, body: { description } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

export async function attach(secret: string, twin: string, identities: Record<string, { validity_ts?: number | null; visibility?: string | null }>) {
	const res = await call("POST", idPath(twin), { secret, body: { identities } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.identities;
}

// A user of the admin's account holding a new role with the given rules.
export async function userWithRules(admin: Account, rules: { twin?: string | null; identity?: string | null }, description = {}) {
	const role = await call("POST", "/roles", { secret: admin.secret, body: { name: "Rule holder", rules } });
	expect(role.status).toBe(201);
	const user = await call("POST", "/users", { secret: admin.secret, body: { name: "reader", role: role.body.uuid, description } });
	expect(user.status).toBe(201);
	return issueSecret(admin, user.body.uuid);
}

// Identities written straight into D1 in batches, for tests that need thousands.
export async function seedIdentities(account: string, rows: { twin: string; identity: string; visibility?: string | null }[]) {
	const statement = env.DB.prepare(
		"INSERT INTO twin_identities (twin, account, identity, validity_ts, visibility, created_ts, updated_ts) VALUES (?, ?, ?, NULL, ?, 1, 1)",
	);
	for (let i = 0; i < rows.length; i += 500) {
		await env.DB.batch(rows.slice(i, i + 500).map((r) => statement.bind(r.twin, account, r.identity, r.visibility ?? null)));
	}
}

export { fingerprint } from "../helpers";

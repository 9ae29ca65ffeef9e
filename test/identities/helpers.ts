// What the identities tests (and a policy test that hides identities) share: an identity's path,
// identities attached through the API, and identities written straight into D1 in bulk.
import { expect } from "vitest";
import { call } from "../support/requests";
import { dbOf } from "../support/shards";

export const idPath = (twin: string, identity?: string) =>
	`/twins/${twin}/identities${identity === undefined ? "" : `/${encodeURIComponent(identity)}`}`;

export async function attach(
	secret: string,
	twin: string,
	identities: Record<string, { validity_ts?: number | null; visibility?: string | null }>,
) {
	const res = await call("POST", idPath(twin), { secret, body: { identities } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.identities;
}

// Identities written straight into D1 in batches, for tests that need thousands.
export async function seedIdentities(
	account: string,
	rows: { twin: string; identity: string; visibility?: string | null }[],
) {
	const db = dbOf(account);
	const statement = db.prepare(
		"INSERT INTO twin_identities (twin, account, identity, validity_ts, visibility, created_ts, updated_ts) VALUES (?, ?, ?, NULL, ?, 1, 1)",
	);
	for (let i = 0; i < rows.length; i += 500) {
		await db.batch(
			rows.slice(i, i + 500).map((r) => statement.bind(r.twin, account, r.identity, r.visibility ?? null)),
		);
	}
}

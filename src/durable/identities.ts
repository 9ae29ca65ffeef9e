import type { Database } from "../db/client";
import { deleteIdentity, type IdentityChanges, type IdentityRow, insertIdentities, listOwnIdentities, patchIdentity } from "../db/identities";
import { ApiError } from "../base/errors";
import { now } from "../base/time";

// An account's identity writes. AccountDO runs them one at a time, so the duplicate and quota
// checks of a create cannot race another write of the same account (only that account writes
// its identities, on whichever twin).

export const MAX_IDENTITIES_PER_TWIN = 1000;

export type IdentityInput = Record<string, { validity_ts?: number | null; visibility?: string | null }>;

// The record the API shows. The writes below add the twin as `uuid`, which the object's write
// journal records; the operations' response schemas leave it out of the answer.
export function identityRecord(row: IdentityRow) {
	return {
		validity_ts: row.validity_ts,
		visibility: row.visibility,
		updated_ts: row.updated_ts,
		creation_certificate: { identity: row.identity, creator: row.account, created_ts: row.created_ts },
	};
}

export async function createIdentities(db: Database, account: string, twin: string, input: IdentityInput) {
	const existing = new Set((await listOwnIdentities(db, twin, account)).map((row) => row.identity));
	const names = Object.keys(input);
	const taken = names.filter((name) => existing.has(name));
	if (taken.length) {
		const details = taken.map((name) => ({ path: `identities.${name}`, message: "The account already has this identity on the twin" }));
		throw new ApiError("conflict", { description: `The account already has ${taken.join(", ")} on this twin`, details });
	}
	if (existing.size + names.length > MAX_IDENTITIES_PER_TWIN) {
		throw new ApiError("conflict", { description: `An account may attach at most ${MAX_IDENTITIES_PER_TWIN} identities to one twin` });
	}
	const at = now();
	const rows = names.map((identity) => ({
		twin,
		account,
		identity,
		validity_ts: input[identity].validity_ts ?? null,
		visibility: input[identity].visibility ?? null,
		created_ts: at,
		updated_ts: at,
	}));
	await insertIdentities(db, rows);
	return { uuid: twin, identities: Object.fromEntries(rows.map((row) => [row.identity, identityRecord(row)])) };
}

export async function updateIdentity(db: Database, account: string, twin: string, identity: string, changes: IdentityChanges) {
	const row = await patchIdentity(db, twin, account, identity, changes, now());
	if (!row) throw new ApiError("not_found", { description: "No such identity" });
	return { uuid: twin, ...identityRecord(row) };
}

export async function removeIdentity(db: Database, account: string, twin: string, identity: string) {
	const row = await deleteIdentity(db, twin, account, identity);
	if (!row) throw new ApiError("not_found", { description: "No such identity" });
	return { uuid: twin, ...identityRecord(row) };
}

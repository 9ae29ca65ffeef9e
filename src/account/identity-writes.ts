import { type Database, database } from "../db/client";
import { directoryChangeOf, directoryPuts, putHolder } from "../db/directory";
import { runBatch } from "../db/ledgers";
import { homeDatabase, refuseIfMoving } from "../db/shards";
import {
	deleteIdentity,
	type IdentityChanges,
	type IdentityRow,
	insertIdentities,
	listOwnIdentities,
	patchIdentity,
} from "../db/identities";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import type { Caller } from "../base/caller";
import type { D1Meter } from "../db/meter";
import { canSeeIdentity } from "../rules/identities";
import type { TwinView } from "../rules/visibility";
import { type LineMark, lineMarks } from "../db/jobs";

// An account's identity writes. AccountDO runs them one at a time, so the duplicate and quota
// checks of a create cannot race another write of the same account (only that account writes
// its identities, on whichever twin). A write that makes an identity public, private or gone
// leaves a row in the account's directory outbox in its own batch (`directory: true`), which
// the object applies to the directory before it answers (directory.ts); one that makes an
// identity public on another account's twin first lists the account with the twin, in the
// twin owner's database, so that readers of the twin's identities ask this account's database.

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

// An identity the writer cannot see is absent to it, as to its reads. The role's identity
// rule reads the identity's name, the twin and the user, never the identity's own settings, so
// an identity it hides is hidden whatever is written: creating one is refused (403102) whether
// it exists or not, the duplicate check meets only identities the writer sees, and
// Server-Timing counts only those. The per-twin limit counts them all: it bounds the rows.
// `mark`: a batch line's, committed with the identities (the holder's listing before them is
// a batch of its own, in the twin owner's database, which a second run puts again harmlessly).
export async function createIdentities(
	db: Database,
	meter: D1Meter,
	writer: Caller,
	twin: TwinView,
	input: IdentityInput,
	env: Env,
	mark?: LineMark,
) {
	const at = now();
	const names = Object.keys(input);
	const sees = (identity: string) =>
		canSeeIdentity(writer, { identity, account: writer.account, visibility: null, validity_ts: null }, twin, at);
	const unseen = names.filter((name) => !sees(name));
	if (unseen.length) {
		const details = unseen.map((name) => ({
			path: `identities.${name}`,
			message: "The role's identity rule would hide this identity from its writer",
		}));
		throw new ApiError("escalation", {
			description: `The caller's role would not see ${unseen.join(", ")}: a user attaches only identities it can see`,
			details,
		});
	}
	let count = 0;
	const seen = await meter.sighted(
		async () => {
			const rows = await listOwnIdentities(db, twin.uuid, writer.account);
			count = rows.length;
			return rows;
		},
		(row) => sees(row.identity),
	);
	const existing = new Set(seen.map((row) => row.identity));
	const taken = names.filter((name) => existing.has(name));
	if (taken.length) {
		const details = taken.map((name) => ({
			path: `identities.${name}`,
			message: "The account already has this identity on the twin",
		}));
		throw new ApiError("conflict", {
			description: `The account already has ${taken.join(", ")} on this twin`,
			details,
		});
	}
	if (count + names.length > MAX_IDENTITIES_PER_TWIN) {
		throw new ApiError("conflict", {
			description: `An account may attach at most ${MAX_IDENTITIES_PER_TWIN} identities to one twin`,
		});
	}
	const rows = names.map((identity) => ({
		twin: twin.uuid,
		account: writer.account,
		identity,
		validity_ts: input[identity].validity_ts ?? null,
		visibility: input[identity].visibility ?? null,
		created_ts: at,
		updated_ts: at,
	}));
	const published = rows.filter((row) => row.visibility !== null).map((row) => row.identity);
	if (published.length) await listHolder(env, twin, writer.account);
	await runBatch(db, [
		...insertIdentities(db, rows),
		...directoryPuts(db, writer.account, twin.uuid, published),
		...lineMarks(db, mark, at),
	]);
	return {
		uuid: twin.uuid,
		identities: Object.fromEntries(rows.map((row) => [row.identity, identityRecord(row)])),
		directory: published.length > 0,
	};
}

// The account listed with another account's twin, in that account's database, before the
// write that gives it public identities there; nothing is written into a bucket that is moving.
async function listHolder(env: Env, twin: Pick<TwinView, "uuid" | "owner">, account: string) {
	if (twin.owner === account) return;
	const d1 = homeDatabase(env, twin.uuid);
	await refuseIfMoving(d1, twin.uuid);
	await putHolder(database(d1), twin.uuid, account);
}

export async function updateIdentity(
	db: Database,
	env: Env,
	account: string,
	twin: Pick<TwinView, "uuid" | "owner">,
	identity: string,
	changes: IdentityChanges,
	mark?: LineMark,
) {
	const key = { twin: twin.uuid, account, identity };
	const directory = changes.visibility !== undefined;
	if (changes.visibility != null) await listHolder(env, twin, account);
	const at = now();
	// A batch line's mark commits with the change, or with a patch that found no identity.
	const [rows] = await runBatch(db, [
		patchIdentity(db, twin.uuid, account, identity, changes, at),
		...(directory ? [directoryChangeOf(db, key, "as-it-is")] : []),
		...lineMarks(db, mark, at),
	]);
	const [row] = rows as IdentityRow[];
	if (!row) throw new ApiError("not_found", { description: "No such identity" });
	return { uuid: twin.uuid, ...identityRecord(row), directory };
}

export async function removeIdentity(db: Database, account: string, twin: string, identity: string, mark?: LineMark) {
	// The outbox row is read from the identity before the delete removes it.
	const [, rows] = await runBatch(db, [
		directoryChangeOf(db, { twin, account, identity }, "end"),
		deleteIdentity(db, twin, account, identity),
		...lineMarks(db, mark, now()),
	]);
	const [row] = rows as IdentityRow[];
	if (!row) throw new ApiError("not_found", { description: "No such identity" });
	return { uuid: twin, ...identityRecord(row), directory: row.visibility !== null };
}

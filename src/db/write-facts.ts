import { type SQL, sql } from "drizzle-orm";
import { CREDENTIAL_SELECT, type CredentialRow, credentialOf } from "./auth";
import type { Database } from "./client";
import { writeGuards } from "./schema";

// The facts a ledger write rests on, as the account's object keeps them between writes
// (account/ledger-facts.ts): who the writer is, the twin, the ledger. Each is read by one
// statement whose one value is the fact's fingerprint, a JSON text SQL builds from the rows it
// rests on; the object keeps the text and what it says. A write's batch starts with a guard
// per fact it used: the guard computes the fingerprint again from the rows as they are and, if
// it differs from the one kept, inserts into write_guards, whose CHECK refuses any row, so the
// whole batch rolls back and nothing of it is written. A fact changed by anyone (another
// write path, a migration, a bucket's move, a Worker still on older code) is caught in the very
// batch that would have relied on it, at no extra round trip.

export type FactKey =
	// The caller a secret stands for: the credential query, the move's row included.
	| { kind: "secret"; hash: string }
	// A user and its role, for a credential that rests on more than a secret.
	| { kind: "user"; account: string; user: string }
	| { kind: "twin"; uuid: string }
	| { kind: "ledger"; twin: string; account: string };

export const factId = (key: FactKey): string => {
	switch (key.kind) {
		case "secret":
			return `secret:${key.hash}`;
		case "user":
			return `user:${key.account}:${key.user}`;
		case "twin":
			return `twin:${key.uuid}`;
		case "ledger":
			return `ledger:${key.twin}:${key.account}`;
	}
};

// Every fingerprint query selects one value, null when nothing is there. A ledger's lists each
// entry's name, times, size and value length in name order: the object writes every change
// with new times, so a write it did not make shows too.
function fingerprint(key: FactKey): SQL {
	switch (key.kind) {
		case "secret":
			return sql`SELECT json_array(c.account, c.user, c.role, c.statement, c.rules, c.description, c.moving,
				c.validity_ts, c.fingerprint, c.created_ts, c.hash)
				FROM (${sql.raw(CREDENTIAL_SELECT)} WHERE user_secrets.hash = ${key.hash} LIMIT 1) AS c`;
		case "user":
			return sql`SELECT json_array(users.role, roles.statement, roles.rules, users.description)
				FROM users JOIN roles ON roles.uuid = users.role WHERE users.uuid = ${key.user} AND users.account = ${key.account}`;
		case "twin":
			return sql`SELECT json_array(uuid, owner, status, description, version) FROM twins WHERE uuid = ${key.uuid}`;
		case "ledger":
			return sql`SELECT count(*) || ':' || ifnull(group_concat(
					name || '/' || entry_updated_ts || '/' || value_changed_ts || '/' || size || '/' || length(value),
					',' ORDER BY name), '')
				FROM ledger_entries WHERE twin = ${key.twin} AND account = ${key.account}`;
	}
}

// One row, for a select of values alone (a query builder's statements may join a batch of
// several requests; a raw one cannot).
const ONE_ROW = sql`(SELECT 1)`;

// The fact's fingerprint, as one row with one value named `fact`.
export function factStatement(db: Database, key: FactKey) {
	return db.select({ fact: sql<string | null>`(${fingerprint(key)})` }).from(ONE_ROW);
}

// Fails its batch unless the fact's fingerprint is still `kept`.
export function guardStatement(db: Database, key: FactKey, kept: string | null) {
	const stale = db
		.select({ held: sql<number>`0`.as("held") })
		.from(ONE_ROW)
		.where(sql`(${fingerprint(key)}) IS NOT ${kept}`);
	return db.insert(writeGuards).select(stale);
}

// What a fingerprint says, read back from its JSON.
export function credentialOfFact(fact: string | null) {
	if (fact === null) return undefined;
	const [account, user, role, statement, rules, description, moving, validity_ts, fingerprint, created_ts, hash] =
		JSON.parse(fact) as unknown[];
	return credentialOf({
		account,
		user,
		role,
		statement,
		rules,
		description,
		moving,
		validity_ts,
		fingerprint,
		created_ts,
		hash,
	} as CredentialRow);
}

export function userOfFact(fact: string | null) {
	if (fact === null) return undefined;
	const [role, statement, rules, description] = JSON.parse(fact) as string[];
	return {
		role: role!,
		statement: JSON.parse(statement!),
		rules: JSON.parse(rules!),
		description: JSON.parse(description!),
	};
}

export function twinOfFact(fact: string | null) {
	if (fact === null) return undefined;
	const [uuid, owner, status, description] = JSON.parse(fact) as string[];
	return {
		uuid: uuid!,
		owner: owner!,
		status: status as "alive" | "terminated",
		description: JSON.parse(description!),
	};
}

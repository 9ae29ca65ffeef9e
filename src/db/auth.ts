import type { Description, RoleRules, Statement } from "./schema";

// One query resolves a secret to its user and role, so authentication costs one D1 round trip.
// It runs on every authenticated request, so its text is fixed here rather than rebuilt by the
// query builder each time (that cost more CPU than the rest of a minimal request together).
const SELECT = `SELECT users.account, users.uuid AS user, users.role, roles.statement, roles.rules,
	users.description, user_secrets.validity_ts, user_secrets.fingerprint, user_secrets.created_ts, user_secrets.hash
	FROM user_secrets
	JOIN users ON users.uuid = user_secrets.user
	JOIN roles ON roles.uuid = users.role`;
const CREDENTIAL = `${SELECT} WHERE user_secrets.hash = ? LIMIT 1`;
// A stream token names its user, not its secret: the user's one secret, whatever it is now.
const CREDENTIAL_OF_USER = `${SELECT} WHERE user_secrets.user = ? LIMIT 1`;

export type CredentialRow = {
	account: string;
	user: string;
	role: string;
	statement: string;
	rules: string;
	description: string;
	validity_ts: number | null;
	fingerprint: string;
	created_ts: number;
	hash: string;
};

export async function findCredential(d1: D1Database, hash: string) {
	return credentialOf(await credentialStatement(d1, hash).first<CredentialRow>());
}

export async function findCredentialOfUser(d1: D1Database, user: string) {
	return credentialOf(await d1.prepare(CREDENTIAL_OF_USER).bind(user).first<CredentialRow>());
}

// The same lookup as a statement, to run in one batch with other reads.
export function credentialStatement(d1: D1Database, hash: string) {
	return d1.prepare(CREDENTIAL).bind(hash);
}

export function credentialOf(row: CredentialRow | null | undefined) {
	if (!row) return undefined;
	return {
		account: row.account,
		user: row.user,
		role: row.role,
		statement: JSON.parse(row.statement) as Statement,
		rules: JSON.parse(row.rules) as RoleRules,
		description: JSON.parse(row.description) as Description,
		validity_ts: row.validity_ts,
		fingerprint: row.fingerprint,
		created_ts: row.created_ts,
		hash: row.hash,
	};
}

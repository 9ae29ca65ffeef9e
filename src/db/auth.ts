import type { Description, RoleRules, Statement } from "./schema";

// Whether the caller's account's bucket is moving between databases (docs/scaling.md, "Moving a
// bucket"): the move's row is on every shard, so the credential query reads it where it runs.
// Accounts from before sharding (version-4 ids) never move.
const MOVING = `(SELECT state FROM bucket_moves WHERE prefix = substr(users.account, 1, 2)
	AND substr(users.account, 15, 1) = '8') AS moving`;

// One query resolves a secret to its user and role, so authentication costs one D1 round trip.
// It runs on every authenticated request, so its text is fixed here rather than rebuilt by the
// query builder each time (that cost more CPU than the rest of a minimal request together).
export const CREDENTIAL_SELECT = `SELECT users.account, users.uuid AS user, users.role, roles.statement, roles.rules,
	users.description, ${MOVING}, user_secrets.validity_ts, user_secrets.fingerprint, user_secrets.created_ts, user_secrets.hash
	FROM user_secrets
	JOIN users ON users.uuid = user_secrets.user
	JOIN roles ON roles.uuid = users.role`;
const CREDENTIAL = `${CREDENTIAL_SELECT} WHERE user_secrets.hash = ? LIMIT 1`;
// A stream token names its user, not its secret: the user's one secret, whatever it is now.
const CREDENTIAL_OF_USER = `${CREDENTIAL_SELECT} WHERE user_secrets.user = ? LIMIT 1`;

// A token issued for a user by another (issue_user_token) rests on the issuer's secret, found by
// its hash, and on the target's secret as it is now (none is an answer too): one query, as a
// secret's. The principal is the target's.
const ISSUED = `SELECT users.account, users.uuid AS user, users.role, roles.statement, roles.rules, users.description,
	${MOVING}, issuer.validity_ts, issuer.fingerprint, issuer.hash, issuer.user AS actor, issuer.account AS actor_account,
	target.hash AS target_hash, target.validity_ts AS target_validity_ts
	FROM user_secrets AS issuer
	JOIN users ON users.uuid = ?2
	JOIN roles ON roles.uuid = users.role
	LEFT JOIN user_secrets AS target ON target.user = users.uuid
	WHERE issuer.hash = ?1 LIMIT 1`;

// A token an exchange gave rests on its link (by uuid) and the link's provider as it is now.
const FEDERATED = `SELECT users.account, users.uuid AS user, users.role, roles.statement, roles.rules, users.description,
	${MOVING}, links.provider, links.subject, identity_providers.updated_ts AS provider_updated_ts
	FROM user_external_ids AS links
	JOIN identity_providers ON identity_providers.uuid = links.provider
	JOIN users ON users.uuid = links.user
	JOIN roles ON roles.uuid = users.role
	WHERE links.uuid = ? LIMIT 1`;

type PrincipalRow = {
	account: string;
	user: string;
	role: string;
	statement: string;
	rules: string;
	description: string;
	moving: string | null;
};
type IssuedRow = PrincipalRow & {
	validity_ts: number | null;
	fingerprint: string;
	hash: string;
	actor: string;
	actor_account: string;
	target_hash: string | null;
	target_validity_ts: number | null;
};
type FederatedRow = PrincipalRow & { provider: string; subject: string; provider_updated_ts: number };

const principalOf = (row: PrincipalRow) => ({
	account: row.account,
	user: row.user,
	role: row.role,
	statement: JSON.parse(row.statement) as Statement,
	rules: JSON.parse(row.rules) as RoleRules,
	description: JSON.parse(row.description) as Description,
	...(row.moving ? { moving: true as const } : {}),
});

export async function findIssuedCredential(d1: D1Database, sec: string, target: string) {
	const row = await d1.prepare(ISSUED).bind(sec, target).first<IssuedRow>();
	if (!row) return undefined;
	const { validity_ts, fingerprint, hash, actor, actor_account, target_hash, target_validity_ts } = row;
	return { ...principalOf(row), validity_ts, fingerprint, hash, actor, actor_account, target_hash, target_validity_ts };
}

export async function findFederatedCredential(d1: D1Database, link: string) {
	const row = await d1.prepare(FEDERATED).bind(link).first<FederatedRow>();
	if (!row) return undefined;
	return {
		...principalOf(row),
		provider: row.provider,
		subject: row.subject,
		provider_updated_ts: row.provider_updated_ts,
	};
}

export type IssuedFound = NonNullable<Awaited<ReturnType<typeof findIssuedCredential>>>;
export type FederatedFound = NonNullable<Awaited<ReturnType<typeof findFederatedCredential>>>;

export type CredentialRow = {
	account: string;
	user: string;
	role: string;
	statement: string;
	rules: string;
	description: string;
	moving: string | null;
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
		...principalOf(row),
		validity_ts: row.validity_ts,
		fingerprint: row.fingerprint,
		created_ts: row.created_ts,
		hash: row.hash,
	};
}

// What the federation tests share: identity providers configured in an account, links, the
// token exchange and the tokens issued for a user, all through the Worker's fetch.
import { expect } from "vitest";
import { call } from "../support/requests";
import { type Account, bootstrap, createUser } from "../support/accounts";
import { type Alg, IdentityProvider } from "./identity-provider";

export const PROVIDERS = "/account/identity-providers";
export const EXCHANGE = "/token/exchange";
export const providerPath = (uuid: string) => `${PROVIDERS}/${uuid}`;
export const linksPath = (user: string, provider?: string) =>
	`/users/${user}/external-ids${provider === undefined ? "" : `/${provider}`}`;

// A loopback jwks_uri is accepted only under the "any" policy (the tests' wrangler.toml says "public").
export const ANY = { CALLBACK_POLICY: "any" } as const;

export const RECORD_KEYS = [
	"uuid",
	"issuer",
	"audiences",
	"algorithms",
	"jwks_uri",
	"jwks",
	"clock_skew",
	"subject_claim",
	"dict_claims",
	"provisioning",
	"token_validity",
	"exp_extension",
	"created_ts",
	"updated_ts",
];

export type ProviderRecord = {
	uuid: string;
	issuer: string;
	audiences: string[];
	algorithms: string[];
	jwks_uri: string | null;
	jwks: { keys: unknown[] } | null;
	clock_skew: number;
	subject_claim: string;
	dict_claims: Record<string, string>;
	provisioning: { role: string; name_claim?: string } | null;
	token_validity: number;
	exp_extension: number;
	created_ts: number;
	updated_ts: number;
};

// The body that configures `idp` in an account: its issuer and audience, the algorithms of its
// keys, and its keys inline or (remote) at its receiver URL.
export function providerBody(idp: IdentityProvider, fields: Record<string, unknown> = {}, remote = false) {
	const algorithms = [...new Set(idp.keys.map((key) => key.alg))];
	return {
		issuer: idp.issuer,
		audiences: [idp.audience],
		algorithms,
		...(remote ? { jwks_uri: idp.jwksUri } : { jwks: idp.jwks() }),
		...fields,
	};
}

// Configures `idp` in the account of `admin` (remote: its set published on the receiver first),
// expecting 201; answers the record.
export async function addProvider(
	admin: Account,
	idp: IdentityProvider,
	fields: Record<string, unknown> = {},
	remote = false,
): Promise<ProviderRecord> {
	if (remote) await idp.publish();
	const res = await call("POST", PROVIDERS, {
		secret: admin.secret,
		body: providerBody(idp, fields, remote),
		env: remote ? ANY : undefined,
	});
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body;
}

export function updateProvider(admin: Account, uuid: string, body: Record<string, unknown>) {
	return call("PATCH", providerPath(uuid), { secret: admin.secret, body, env: ANY });
}

export async function link(secret: string, user: string, provider: string, subject: string) {
	const res = await call("POST", linksPath(user), { secret, body: { provider, subject } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { provider: string; subject: string; created_ts: number };
}

export function exchange(
	account: string,
	subject_token: string,
	extra: Record<string, unknown> = {},
	headers: Record<string, string> = {},
) {
	return call("POST", EXCHANGE, { body: { account, subject_token, ...extra }, headers });
}

export type Exchanged = {
	token: string;
	options: string[];
	validity_ts: number;
	account: string;
	user: string;
	provisioned: boolean;
};

export async function exchanged(
	account: string,
	subject_token: string,
	extra: Record<string, unknown> = {},
): Promise<Exchanged> {
	const res = await exchange(account, subject_token, extra);
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body;
}

// An account trusting a new identity provider (inline keys unless remote), with a user of the
// account's default role linked to `subject` at it.
export async function federated(
	options: {
		admin?: Account;
		algs?: Alg[];
		fields?: Record<string, unknown>;
		remote?: boolean;
		subject?: string;
		role?: string;
	} = {},
) {
	const admin = options.admin ?? (await bootstrap());
	const idp = await IdentityProvider.create(options.algs);
	const provider = await addProvider(admin, idp, options.fields, options.remote);
	const user = await createUser(admin, options.role ?? admin.role, "linked user");
	const subject = options.subject ?? `subject-${crypto.randomUUID()}`;
	await link(admin.secret, user, provider.uuid, subject);
	return { admin, idp, provider, user, subject };
}

// A federated user's User Token, from an exchange of a fresh ID token for `subject`.
export async function signIn(
	world: { admin: Account; idp: IdentityProvider; subject: string },
	extra: Record<string, unknown> = {},
	claims: Record<string, unknown> = {},
) {
	return exchanged(world.admin.account, await world.idp.idToken({ sub: world.subject, ...claims }), extra);
}

export const issuePath = (user: string) => `/users/${user}/token`;

// issue_user_token, expected to answer 201.
export async function issue(secret: string, user: string, body: Record<string, unknown> = {}) {
	const res = await call("POST", issuePath(user), { secret, body });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { token: string; options: string[]; validity_ts: number; user: string };
}

export async function whoami(secret: string) {
	return call("GET", "/whoami", { secret });
}

export async function traceOf(secret: string) {
	const res = await call("POST", "/trace", { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body;
}

// The claims of a token this service made (not verified: what it carries).
export function claimsOf(token: string): Record<string, any> {
	const segment = token.split(".")[1]!.replaceAll("-", "+").replaceAll("_", "/");
	return JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(segment), (c) => c.charCodeAt(0))));
}

export const nowTs = () => Date.now() / 1000;

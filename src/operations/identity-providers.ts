import * as z from "zod/mini";
import { accountClient } from "../account/client";
import type { ProviderInput } from "../account/federation-writes";
import { ApiError, type ErrorDetail } from "../base/errors";
import { checkJwkSet, FOREIGN_ALGORITHMS, type JwkSet, MAX_JWKS_KEYS } from "../base/foreign-jwt";
import { MAX_IDENTITY_PROVIDERS_CEILING } from "../base/limits";
import { dbOf } from "../db/client";
import { findProvider, listProviders, type ProviderRow } from "../db/federation";
import { checkCallbackUrl, MAX_CALLBACK_URL_LENGTH } from "../notifications/callback-policy";
import { defineOperation } from "./operation";
import { DESCRIPTION_KEY, jsonValue, mapOf, timestampOut, uuid, uuidOut, withMeta } from "./schemas";

// The OpenID Connect issuers an account trusts to sign its users in (docs/sign-in.md). Only the
// account's administrator changes them (the account's object checks); any role its statement
// allows reads them.

const CLAIM_NAME = /^[A-Za-z_][0-9A-Za-z_.:-]{0,63}$/;
const claimName = z
	.string()
	.check(z.regex(CLAIM_NAME, "Must be a top-level claim name: ^[A-Za-z_][0-9A-Za-z_.:-]{0,63}$"));
const MAX_DICT_CLAIMS = 16;
const unique = <T>(items: T[]) => [...new Set(items)];

const fields = {
	issuer: z.string().check(z.minLength(1), z.maxLength(512)),
	audiences: z.pipe(
		z.array(z.string().check(z.minLength(1), z.maxLength(256))).check(z.minLength(1), z.maxLength(10)),
		z.transform(unique),
	),
	algorithms: z.pipe(
		z.array(z.enum(FOREIGN_ALGORITHMS, "Must be RS256, ES256 or EdDSA")).check(z.minLength(1), z.maxLength(3)),
		z.transform(unique),
	),
	jwks_uri: z.nullable(z.string().check(z.maxLength(MAX_CALLBACK_URL_LENGTH))),
	jwks: z.nullable(
		z.strictObject({
			keys: z.array(z.record(z.string(), jsonValue)).check(z.minLength(1), z.maxLength(MAX_JWKS_KEYS)),
		}),
	),
	clock_skew: z.number().check(z.int(), z.gte(0), z.lte(300)),
	subject_claim: claimName,
	dict_claims: z
		.record(z.string().check(z.regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$")), claimName)
		.check(z.refine((claims) => Object.keys(claims).length <= MAX_DICT_CLAIMS, `At most ${MAX_DICT_CLAIMS} entries`)),
	provisioning: z.nullable(z.strictObject({ role: uuid, name_claim: z.optional(claimName) })),
	token_validity: z.number().check(z.int(), z.gte(60), z.lte(86_400)),
	exp_extension: z.number().check(z.int(), z.gte(0), z.lte(86_400)),
};

type Fields = { [K in keyof typeof fields]: z.infer<(typeof fields)[K]> };

const DEFAULTS = {
	algorithms: ["RS256"],
	clock_skew: 60,
	subject_claim: "sub",
	dict_claims: {},
	provisioning: null,
	token_validity: 3600,
	exp_extension: 0,
} as const;

const providerRecord = withMeta(
	z.object({
		uuid: uuidOut,
		issuer: z.string(),
		audiences: z.array(z.string()).check(z.maxLength(10)),
		algorithms: z.array(z.enum(FOREIGN_ALGORITHMS)).check(z.maxLength(3)),
		jwks_uri: z.nullable(z.string()),
		jwks: z.nullable(z.object({ keys: z.array(mapOf(jsonValue, 64)).check(z.maxLength(MAX_JWKS_KEYS)) })),
		clock_skew: z.number(),
		subject_claim: z.string(),
		dict_claims: mapOf(z.string(), MAX_DICT_CLAIMS),
		provisioning: z.nullable(z.object({ role: uuidOut, name_claim: z.string() })),
		token_validity: z.number(),
		exp_extension: z.number(),
		created_ts: timestampOut,
		updated_ts: timestampOut,
	}),
	{ id: "IdentityProvider" },
);

function recordOf(row: ProviderRow) {
	const { provisioning_role: role, provisioning_name_claim: nameClaim, account: _, ...rest } = row;
	return { ...rest, provisioning: role === null ? null : { role, name_claim: nameClaim ?? "name" } };
}

// What the account's object stores for the fields given: the provisioning object in its columns.
function inputOf(given: Partial<Fields>): Partial<ProviderInput> {
	const { provisioning, jwks, ...rest } = given;
	return {
		...rest,
		...(jwks === undefined ? {} : { jwks: jwks as JwkSet | null }),
		...(provisioning === undefined
			? {}
			: {
					provisioning_role: provisioning?.role ?? null,
					provisioning_name_claim: provisioning ? (provisioning.name_claim ?? "name") : null,
				}),
	};
}

function invalid(details: ErrorDetail[]): never {
	throw new ApiError("validation", { description: details.map((d) => `${d.path}: ${d.message}`).join("; "), details });
}

// The keys as the provider will hold them: exactly one of an inline JWK Set (each key imported
// now) and a jwks_uri under the callback URL policy (fetched only by an exchange).
async function checkKeys(
	keys: { jwks: JwkSet | null; jwks_uri: string | null },
	policy: string,
): Promise<{ jwks: JwkSet | null; jwks_uri: string | null }> {
	if ((keys.jwks === null) === (keys.jwks_uri === null)) {
		invalid([{ path: "jwks", message: "Give exactly one of jwks and jwks_uri" }]);
	}
	if (keys.jwks !== null) {
		const details = await checkJwkSet(keys.jwks);
		if (details.length) invalid(details);
		return keys;
	}
	const checked = checkCallbackUrl(keys.jwks_uri!, policy);
	if ("refused" in checked) invalid([{ path: "jwks_uri", message: checked.refused }]);
	return { jwks: null, jwks_uri: checked.url };
}

const providerParams = z.strictObject({ provider: uuid });
const ADMIN_ONLY = "Only the account's administrator (its role allows everything and has no rule) may call it.";

// Every field, optional: an update gives any of them, a create the two it requires besides.
const changes = {
	issuer: z.optional(fields.issuer),
	audiences: z.optional(fields.audiences),
	algorithms: z.optional(fields.algorithms),
	jwks_uri: z.optional(fields.jwks_uri),
	jwks: z.optional(fields.jwks),
	clock_skew: z.optional(fields.clock_skew),
	subject_claim: z.optional(fields.subject_claim),
	dict_claims: z.optional(fields.dict_claims),
	provisioning: z.optional(fields.provisioning),
	token_validity: z.optional(fields.token_validity),
	exp_extension: z.optional(fields.exp_extension),
};

export const createIdentityProvider = defineOperation({
	name: "create_identity_provider",
	summary: "Trust an OpenID Connect issuer to sign the account's users in",
	description: `Registers an identity provider: its issuer, audiences, algorithms and keys (an inline JWK Set, or a jwks_uri under the callback URL policy), clock skew, subject claim, claims mapped into DICT, and optionally a role to provision unknown subjects with. ${ADMIN_ONLY}`,
	refuses: ["escalation", "conflict", "identity_provider_limit", "not_found"],
	example: {
		issuer: "https://login.example.com/",
		audiences: ["my-app"],
		jwks_uri: "https://login.example.com/.well-known/jwks.json",
		dict_claims: { site: "site" },
	},
	auth: "secret",
	status: 201,
	response: providerRecord,
	body: z.strictObject({ ...changes, issuer: fields.issuer, audiences: fields.audiences }),
	async run({ body }, ctx) {
		const keys = await checkKeys(
			{ jwks: (body.jwks ?? null) as JwkSet | null, jwks_uri: body.jwks_uri ?? null },
			ctx.env.CALLBACK_POLICY,
		);
		const given = { ...DEFAULTS, ...body, ...keys } as Fields;
		const input = inputOf(given) as ProviderInput;
		return recordOf(await accountClient(ctx, ctx.caller.account).createProvider(ctx.caller, input));
	},
});

export const getIdentityProviders = defineOperation({
	name: "get_identity_providers",
	summary: "The identity providers the account trusts",
	description: "Every identity provider of the caller's account by uuid, with its issuer and timestamps.",
	auth: "secret",
	response: z.object({
		providers: mapOf(
			z.object({ issuer: z.string(), created_ts: timestampOut, updated_ts: timestampOut }),
			MAX_IDENTITY_PROVIDERS_CEILING,
		),
	}),
	async run(_input, ctx) {
		const rows = await listProviders(dbOf(ctx), ctx.caller.account);
		return { providers: Object.fromEntries(rows.map(({ uuid, ...rest }) => [uuid, rest])) };
	},
});

export const getIdentityProvider = defineOperation({
	name: "get_identity_provider",
	summary: "An identity provider the account trusts",
	description: "An identity provider of the caller's account: its whole record.",
	refuses: ["not_found"],
	auth: "secret",
	params: providerParams,
	response: providerRecord,
	async run({ params }, ctx) {
		const found = await findProvider(dbOf(ctx), ctx.caller.account, params.provider);
		if (!found) throw new ApiError("not_found", { description: "No such identity provider" });
		return recordOf(found);
	},
});

export const updateIdentityProvider = defineOperation({
	name: "update_identity_provider",
	summary: "Change an identity provider (the tokens its exchanges gave end)",
	description: `Replaces the given fields of an identity provider (jwks replaces jwks_uri and back). Every change ends the User Tokens its exchanges gave and drops its cached keys: the way to stop trusting a compromised key at once. ${ADMIN_ONLY}`,
	refuses: ["escalation", "conflict", "not_found"],
	example: { audiences: ["my-app", "my-mobile-app"] },
	auth: "secret",
	params: providerParams,
	response: providerRecord,
	body: z.strictObject(changes).check(z.refine((body) => Object.keys(body).length > 0, "Give at least one field")),
	async run({ params, body }, ctx) {
		if (body.jwks !== undefined && body.jwks_uri !== undefined)
			invalid([{ path: "jwks", message: "Give jwks or jwks_uri, not both" }]);
		let given: Partial<Fields> = body as Partial<Fields>;
		if (body.jwks !== undefined || body.jwks_uri !== undefined) {
			given = {
				...given,
				...((await checkKeys(
					{ jwks: (body.jwks ?? null) as JwkSet | null, jwks_uri: body.jwks_uri ?? null },
					ctx.env.CALLBACK_POLICY,
				)) as Pick<Fields, "jwks" | "jwks_uri">),
			};
		}
		return recordOf(
			await accountClient(ctx, ctx.caller.account).updateProvider(ctx.caller, params.provider, inputOf(given)),
		);
	},
});

export const deleteIdentityProvider = defineOperation({
	name: "delete_identity_provider",
	summary: "Stop trusting an identity provider (its links and the tokens its exchanges gave end)",
	description: `Deletes an identity provider and its links: the User Tokens its exchanges gave end at once. ${ADMIN_ONLY}`,
	refuses: ["escalation", "not_found"],
	auth: "secret",
	params: providerParams,
	response: providerRecord,
	async run({ params }, ctx) {
		return recordOf(await accountClient(ctx, ctx.caller.account).deleteProvider(ctx.caller, params.provider));
	},
});

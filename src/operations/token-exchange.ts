import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { now } from "../base/time";
import { homeDatabase } from "../db/shards";
import { database } from "../db/client";
import { findLinkedUser } from "../db/federation";
import { exchangeValidity, provisionedName } from "../policy/federation";
import { decide } from "../policy/statement";
import { TOKEN_OPTIONS } from "../policy/token";
import { verifyIdToken } from "./id-tokens";
import { defineOperation } from "./operation";
import { timestampOut, uuid, uuidOut, withMeta } from "./schemas";
import { issue, validity } from "./tokens";

// Signing in (docs/sign-in.md): an ID token from an identity provider the account trusts becomes
// a User Token of the user linked to its subject, or of a user made for it (RFC 8693's token
// exchange in spirit). No credential: the ID token is the proof. The pipeline spends an
// attempt of the client's address on every 401 (AUTH_FAILURES).

const ID_TOKEN = "urn:ietf:params:oauth:token-type:id_token";
const JWT = "urn:ietf:params:oauth:token-type:jwt";
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";

export const exchangeUserToken = defineOperation({
	name: "exchange_user_token",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "Sign in: an ID token from a trusted identity provider for a User Token of its user",
	description:
		"Trades an ID token signed by an identity provider the account trusts for a User Token of the user linked to its subject (or of a user made for it, when the provider provisions). No credential is needed. Any refusal that could tell which accounts exist or whom they trust is one answer, 401261; every 401 spends one of the address's attempts.",
	refuses: [
		"untrusted_token",
		"unverifiable_token",
		"id_token_expired",
		"id_token_early",
		"id_token_subject",
		"subject_not_linked",
		"operation_forbidden",
		"provider_keys_unreachable",
		"user_limit",
		"rate_limited",
		"tokens_unconfigured",
	],
	example: {
		account: "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b",
		subject_token: "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ.eyJpc3MiOiJodHRwczovL2xvZ2luLmV4YW1wbGUuY29tLyJ9.c2lnbmF0dXJl",
	},
	auth: "exchange",
	status: 201,
	response: z.object({
		token: z.string(),
		options: z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(TOKEN_OPTIONS.length)),
		validity_ts: timestampOut,
		account: uuidOut,
		user: uuidOut,
		provisioned: z.boolean(),
	}),
	body: z.strictObject({
		account: uuid,
		subject_token: z.string().check(z.minLength(1), z.maxLength(8192)),
		subject_token_type: withMeta(z.optional(z.enum([ID_TOKEN, JWT])), {
			description: `${ID_TOKEN} (the default) or ${JWT}`,
		}),
		grant_type: z.optional(z.literal(TOKEN_EXCHANGE)),
		options: z._default(z.optional(z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(16))), []),
		validity_ts: validity,
	}),
	async run({ body }, ctx) {
		// Unmetered until the token holds: see verifyIdToken.
		const db = database(homeDatabase(ctx.env, body.account));
		const { provider, subject, dict, exp, payload } = await verifyIdToken(db, body.account, body.subject_token);
		let linked:
			| {
					link: string;
					user: string;
					statement: string | { effect: "allow" | "deny"; actions: string[] | null };
					provisioned: boolean;
			  }
			| undefined;
		const found = await findLinkedUser(db, provider.uuid, subject);
		if (found) linked = { ...found, provisioned: false };
		else if (provider.provisioning_role !== null) {
			const role = provider.provisioning_role;
			const name = provisionedName(payload, provider.provisioning_name_claim ?? "name", subject);
			linked = await accountClient(ctx, body.account).provision({
				account: body.account,
				provider: provider.uuid,
				version: provider.updated_ts,
				subject,
				role,
				name,
			});
		}
		if (!linked) throw new ApiError("subject_not_linked");
		const statement = typeof linked.statement === "string" ? JSON.parse(linked.statement) : linked.statement;
		if (!decide(statement, "exchange_user_token").allowed) {
			throw new ApiError("operation_forbidden", {
				description: "The linked user's role does not allow exchange_user_token",
			});
		}
		const at = now();
		const end = exchangeValidity(body.validity_ts, at, exp, provider);
		if (end <= at)
			throw new ApiError("id_token_expired", { description: "The token the exchange would give ends by now" });
		const options = [...new Set(body.options)];
		const basis = {
			kind: "federated" as const,
			provider: provider.uuid,
			link: linked.link,
			pvu: provider.updated_ts,
			end,
		};
		const token = await issue(ctx, {
			sub: linked.user,
			acc: body.account,
			basis,
			iat: at,
			exp: end,
			opt: options,
			dict,
			jti: crypto.randomUUID(),
		});
		return {
			token,
			options,
			validity_ts: end,
			account: body.account,
			user: linked.user,
			provisioned: linked.provisioned,
		};
	},
});

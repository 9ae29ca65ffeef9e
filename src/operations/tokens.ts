import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import { MIN_TOKEN_KEY_LENGTH, signJwt } from "../base/jwt";
import { now } from "../base/time";
import type { Caller, Description, TokenOption } from "../base/caller";
import {
	basisFor,
	deriveToken,
	mayRefresh,
	payloadOf,
	TOKEN_OPTIONS,
	tokenExpiry,
	type TokenClaims,
} from "../policy/token";
import { defineOperation } from "./operation";
import { DESCRIPTION_KEY, jsonValue, timestamp, timestampOut, uuid, uuidOut } from "./schemas";
import { dbOf } from "../db/client";
import { findSecret } from "../db/secrets";
import { manageableUser } from "../account/guards";

// User Tokens: short-lived credentials a backend hands to a front-end (a browser, a phone) that
// must not hold a User Secret. A token acts as its user with the user's role as it is at each
// request; nothing is stored, so making one writes nothing.

// A dictionary rides in every request made with the token: kept small.
const MAX_SECRET_DICT_BYTES = 2048;

export const secretDict = z
	.record(z.string().check(z.regex(DESCRIPTION_KEY, "Keys must match ^[a-z_][0-9a-z_]{0,63}$")), jsonValue)
	.check(
		z.refine((dict) => new TextEncoder().encode(JSON.stringify(dict)).byteLength <= MAX_SECRET_DICT_BYTES, {
			error: `At most ${MAX_SECRET_DICT_BYTES} bytes of compact JSON`,
		}),
	);

export const validity = z
	.optional(z.nullable(timestamp))
	.check(z.refine((ts) => ts == null || ts > now(), "Must be in the future"));

export async function issue(ctx: { env: Env }, claims: TokenClaims): Promise<string> {
	const key = ctx.env.TOKEN_KEY;
	if (!key || key.length < MIN_TOKEN_KEY_LENGTH) throw new ApiError("tokens_unconfigured");
	return signJwt(key, payloadOf(claims));
}

// A token made with the caller's credential rests on what that credential rests on.
function claimsFor(
	caller: Caller,
	exp: number,
	at: number,
	options: TokenOption[],
	dict: Description | undefined,
): TokenClaims {
	return {
		sub: caller.user,
		acc: caller.account,
		basis: basisFor(caller.credential!.binding),
		iat: at,
		exp,
		opt: options,
		...(dict === undefined ? {} : { dict }),
		jti: crypto.randomUUID(),
	};
}

export const createUserToken = defineOperation({
	name: "create_user_token",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "A User Token: acts as the caller until it expires (a day at most), without its secret",
	description:
		"Issues a signed User Token that acts as the caller with the caller's role, as it is at each request, until validity_ts (a day at most, never past the secret's expiry). secret_dict is read by rules as DICT. A token may make a token only with the create option and only with its own options and secret_dict.",
	refuses: ["credential_forbidden", "escalation", "tokens_unconfigured"],
	example: { options: ["refresh"], secret_dict: { site: "north" }, validity_ts: 4102444800 },
	auth: "secret",
	status: 201,
	response: z.object({
		token: z.string(),
		options: z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(TOKEN_OPTIONS.length)),
		validity_ts: timestampOut,
	}),
	body: z.strictObject({
		secret_dict: z.optional(secretDict),
		options: z._default(z.optional(z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(16))), []),
		validity_ts: validity,
	}),
	async run({ body }, ctx) {
		const credential = ctx.caller.credential!;
		const derived = deriveToken(credential, {
			options: body.options,
			dict: body.secret_dict as Description | undefined,
		});
		if (!derived.ok && derived.refusal === "no_option") {
			throw new ApiError("credential_forbidden", { description: "The User Token does not have the create option" });
		}
		if (!derived.ok) {
			throw new ApiError("escalation", {
				description: "A token made from a token takes only its options and its secret_dict",
			});
		}
		const at = now();
		const exp = tokenExpiry(body.validity_ts, at, [credential.validity_ts, credential.token?.exp]);
		const token = await issue(ctx, claimsFor(ctx.caller, exp, at, derived.options, derived.dict));
		return { token, options: derived.options, validity_ts: exp };
	},
});

export const refreshUserToken = defineOperation({
	name: "refresh_user_token",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "A new copy of the calling User Token with a later expiry (its refresh option needed)",
	description:
		"Issues a new copy of the calling User Token (same options and secret_dict) with a later expiry. Needs a User Token with the refresh option; a User Secret is refused.",
	refuses: ["credential_forbidden", "tokens_unconfigured"],
	example: { validity_ts: 4102444800 },
	auth: "secret",
	status: 201,
	response: z.object({ token: z.string(), validity_ts: timestampOut }),
	body: z.strictObject({ validity_ts: validity }),
	async run({ body }, ctx) {
		const credential = ctx.caller.credential!;
		if (!mayRefresh(credential)) {
			throw new ApiError("credential_forbidden", {
				description: "Only a User Token with the refresh option can be refreshed",
			});
		}
		const at = now();
		// Not bounded by the token's own expiry: outliving it is what refreshing is for.
		const exp = tokenExpiry(body.validity_ts, at, [credential.validity_ts]);
		const token = await issue(ctx, claimsFor(ctx.caller, exp, at, credential.token!.options, credential.token!.dict));
		return { token, validity_ts: exp };
	},
});

// A token for a user the caller manages, made by the caller's backend: the user needs no secret
// of its own, and the token dies with the issuer's secret as well as with the user's
// (docs/sign-in.md "Tokens a backend issues for its users").
export const issueUserToken = defineOperation({
	name: "issue_user_token",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "A User Token for a user the caller manages, made with the caller's secret (a day at most)",
	description:
		"Issues a User Token that acts as the user (the caller itself, or a user whose role and description the caller could give it) with the user's role as it is at each request, until validity_ts: a day at most, never past the caller's secret or the user's. It names the caller as its actor and ends when either secret is deleted or replaced, or either user deleted. Needs a User Secret (a User Token is refused).",
	refuses: ["credential_forbidden", "escalation", "not_found", "tokens_unconfigured"],
	example: { options: ["refresh"], secret_dict: { site: "north" }, validity_ts: 4102444800 },
	auth: "secret",
	status: 201,
	params: z.strictObject({ user: uuid }),
	response: z.object({
		token: z.string(),
		options: z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(TOKEN_OPTIONS.length)),
		validity_ts: timestampOut,
		user: uuidOut,
	}),
	body: z.strictObject({
		secret_dict: z.optional(secretDict),
		options: z._default(z.optional(z.array(z.enum(TOKEN_OPTIONS)).check(z.maxLength(16))), []),
		validity_ts: validity,
	}),
	async run({ params, body }, ctx) {
		const credential = ctx.caller.credential!;
		// Nothing made with a token outlives it; a token for another user would.
		if (credential.type !== "secret" || credential.binding.kind !== "secret") {
			throw new ApiError("credential_forbidden", {
				description: "A token for a user can only be issued with a User Secret, not a User Token",
			});
		}
		const db = dbOf(ctx);
		// The caller itself, or a user it could give a PIN: a token gives no more than that.
		if (params.user !== ctx.caller.user) await manageableUser(db, ctx.caller, params.user);
		const target = await findSecret(db, ctx.caller.account, params.user);
		const at = now();
		const exp = tokenExpiry(body.validity_ts, at, [credential.validity_ts, target?.validity_ts]);
		const options = [...new Set(body.options)];
		const basis = {
			kind: "issued" as const,
			sec: credential.binding.hash,
			actor: ctx.caller.user,
			tsec: target?.hash ?? null,
		};
		const dict = body.secret_dict as Description | undefined;
		const claims: TokenClaims = {
			sub: params.user,
			acc: ctx.caller.account,
			basis,
			iat: at,
			exp,
			opt: options,
			...(dict === undefined ? {} : { dict }),
			jti: crypto.randomUUID(),
		};
		return { token: await issue(ctx, claims), options, validity_ts: exp, user: params.user };
	},
});

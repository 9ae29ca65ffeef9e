import type { Binding, Credential, Description, TokenOption } from "../base/caller";
import { deepEqual } from "../rules/equal";
import type { Json } from "../rules/ast";

// User Tokens: what a token may be made from, how long it lives, and what its claims must be.
// Pure decisions; signing and the credential query are the HTTP layer's.

// A bearer credential held by a browser lives a day at most.
export const MAX_TOKEN_SECONDS = 86_400;
export const TOKEN_OPTIONS = ["create", "refresh"] as const satisfies readonly TokenOption[];

// What a token rests on, as its claims name it (see Binding in base/caller.ts): a secret (`sec`);
// an issuer's secret and the target's as it was (`sec`, `act`, `tsec`); or a provider, a link
// and the sign-in's end (`prv`, `lnk`, `pvu`, `end`).
export type TokenBasis =
	| { kind: "secret"; sec: string }
	| { kind: "issued"; sec: string; actor: string; tsec: string | null }
	| { kind: "federated"; provider: string; link: string; pvu: number; end: number };

export type TokenClaims = {
	sub: string;
	acc: string;
	basis: TokenBasis;
	iat: number;
	exp: number;
	opt: TokenOption[];
	dict?: Description;
	jti: string;
};

const isObject = (value: unknown): value is Record<string, unknown> =>
	typeof value === "object" && value !== null && !Array.isArray(value);
const isText = (value: unknown): value is string => typeof value === "string" && value.length > 0;
const isTime = (value: unknown): value is number => typeof value === "number" && Number.isFinite(value);

function basisOf(payload: Record<string, unknown>): TokenBasis | undefined {
	const { sec, act, tsec, prv, lnk, pvu, end } = payload;
	if (prv !== undefined || lnk !== undefined || pvu !== undefined || end !== undefined) {
		const only = sec === undefined && act === undefined && tsec === undefined;
		return only && isText(prv) && isText(lnk) && isTime(pvu) && isTime(end)
			? { kind: "federated", provider: prv, link: lnk, pvu, end }
			: undefined;
	}
	if (!isText(sec)) return undefined;
	if (act === undefined) return tsec === undefined ? { kind: "secret", sec } : undefined;
	if (!isObject(act) || !isText(act.sub) || !(tsec === null || isText(tsec))) return undefined;
	return { kind: "issued", sec, actor: act.sub, tsec };
}

// The claims of a verified payload, or undefined when one is missing or of another type: the
// key signed it, so this only guards against a payload of another version.
export function claimsOf(payload: Record<string, unknown>): TokenClaims | undefined {
	const { sub, acc, iat, exp, opt, dict, jti } = payload;
	const basis = basisOf(payload);
	if (!basis || !isText(sub) || !isText(acc) || !isText(jti) || !isTime(iat) || !isTime(exp)) return undefined;
	if (!Array.isArray(opt) || !opt.every((o) => (TOKEN_OPTIONS as readonly unknown[]).includes(o))) return undefined;
	if (dict !== undefined && !isObject(dict)) return undefined;
	return { sub, acc, basis, iat, exp, opt: opt as TokenOption[], ...(dict === undefined ? {} : { dict }), jti };
}

// The payload signed for these claims: the basis as its claims (RFC 8693's `act` for an issuer).
export function payloadOf(claims: TokenClaims): Record<string, unknown> {
	const { basis, sub, acc, iat, exp, opt, dict, jti } = claims;
	const named =
		basis.kind === "secret"
			? { sec: basis.sec }
			: basis.kind === "issued"
				? { sec: basis.sec, act: { sub: basis.actor }, tsec: basis.tsec }
				: { prv: basis.provider, lnk: basis.link, pvu: basis.pvu, end: basis.end };
	return { sub, acc, ...named, iat, exp, opt, ...(dict === undefined ? {} : { dict }), jti };
}

// What a new token made with this credential rests on: the same as the credential.
export function basisFor(binding: Binding): TokenBasis {
	switch (binding.kind) {
		case "secret":
			return { kind: "secret", sec: binding.hash };
		case "issued":
			return { kind: "issued", sec: binding.sec, actor: binding.actor, tsec: binding.tsec };
		case "federated":
			return { kind: "federated", provider: binding.provider, link: binding.link, pvu: binding.pvu, end: binding.end };
	}
}

// When a new token stops working: the time asked for (none, or later than a day from now,
// means a day from now), then no later than any of `limits` (the secret's validity, and for a
// token made from a token its parent's expiry).
export function tokenExpiry(
	requested: number | null | undefined,
	at: number,
	limits: (number | null | undefined)[],
): number {
	const longest = at + MAX_TOKEN_SECONDS;
	const asked = requested === null || requested === undefined || requested > longest ? longest : requested;
	const bounds = limits.filter((limit): limit is number => typeof limit === "number");
	return Math.round(Math.min(asked, ...bounds) * 1000) / 1000;
}

// What create_user_token may make with this credential. A secret makes any token. A token
// makes one only with its `create` option, and no wider than itself: options among its own,
// and its own secret_dict (absent in the request means the same).
export type Derivation =
	| { ok: true; options: TokenOption[]; dict?: Description }
	| { ok: false; refusal: "no_option" | "widens" };

export function deriveToken(
	credential: Credential,
	request: { options: TokenOption[]; dict?: Description },
): Derivation {
	const options = [...new Set(request.options)];
	const parent = credential.token;
	if (credential.type === "secret" || !parent)
		return { ok: true, options, ...(request.dict === undefined ? {} : { dict: request.dict }) };
	if (!parent.options.includes("create")) return { ok: false, refusal: "no_option" };
	if (!options.every((option) => parent.options.includes(option))) return { ok: false, refusal: "widens" };
	if (
		request.dict !== undefined &&
		(parent.dict === undefined || !deepEqual(request.dict as Json, parent.dict as Json))
	) {
		return { ok: false, refusal: "widens" };
	}
	return { ok: true, options, ...(parent.dict === undefined ? {} : { dict: parent.dict }) };
}

// Nothing made with a User Token outlives it (docs/operations.md "User Tokens, the account and trace"): what a credential makes that
// lasts (a subscription, an upload or download URL) ends by the token's expiry; a secret sets
// no such bound (null).
export function madeUntil(credential: Credential): number | null {
	return credential.type === "token" && credential.token ? credential.token.exp : null;
}

// A time asked for, no later than such a bound.
export function lastingAtMost(until: number, bound: number | null): number {
	return bound === null ? until : Math.min(until, bound);
}

// refresh_user_token needs a token with the `refresh` option.
export function mayRefresh(credential: Credential): boolean {
	return credential.type === "token" && (credential.token?.options.includes("refresh") ?? false);
}

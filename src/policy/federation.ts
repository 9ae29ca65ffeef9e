import type { Description } from "../base/caller";
import { MAX_TOKEN_SECONDS } from "./token";

// What an exchange decides on an ID token once its signature held under a key the account trusts
// (docs/sign-in.md): pure decisions over its claims, in the order of the exchange's steps 4 to 6.
// Each refusal names its cause: the token's holder signed in with this account's provider.

export type ProviderTerms = {
	clock_skew: number;
	subject_claim: string;
	dict_claims: Record<string, string>;
	token_validity: number;
	exp_extension: number;
};

export type Judged =
	| { ok: true; subject: string; dict: Description; exp: number }
	| { ok: false; refusal: "expired" | "early" | "subject" };

// A DICT rides in every request made with the token: as small as a token's secret_dict.
export const MAX_MAPPED_DICT_BYTES = 2048;
export const MAX_SUBJECT_LENGTH = 255;

export function judgeClaims(payload: Record<string, unknown>, terms: ProviderTerms, at: number): Judged {
	const { exp, nbf, iat } = payload;
	if (typeof exp !== "number" || exp + terms.clock_skew <= at) return { ok: false, refusal: "expired" };
	for (const time of [nbf, iat])
		if (typeof time === "number" && time > at + terms.clock_skew) return { ok: false, refusal: "early" };
	const subject = payload[terms.subject_claim];
	if (typeof subject !== "string" || subject.length < 1 || subject.length > MAX_SUBJECT_LENGTH)
		return { ok: false, refusal: "subject" };
	const dict = mappedDict(payload, terms.dict_claims);
	if (new TextEncoder().encode(JSON.stringify(dict)).byteLength > MAX_MAPPED_DICT_BYTES)
		return { ok: false, refusal: "subject" };
	return { ok: true, subject, dict, exp };
}

// `{<key>: <claim's value>}` for each mapped claim the token holds.
export function mappedDict(payload: Record<string, unknown>, claims: Record<string, string>): Description {
	return Object.fromEntries(
		Object.entries(claims).flatMap(([key, claim]) => (payload[claim] === undefined ? [] : [[key, payload[claim]]])),
	);
}

// When the token an exchange gives ends: the earliest of the time asked for, the provider's
// token_validity from now, the ID token's expiry extended by exp_extension, and a day.
export function exchangeValidity(
	requested: number | null | undefined,
	at: number,
	exp: number,
	terms: ProviderTerms,
): number {
	const bounds = [at + terms.token_validity, exp + terms.exp_extension, at + MAX_TOKEN_SECONDS];
	if (typeof requested === "number") bounds.push(requested);
	return Math.round(Math.min(...bounds) * 1000) / 1000;
}

// A provisioned user's name: the name claim's string, trimmed, at most 128 characters, or else
// the subject.
export function provisionedName(payload: Record<string, unknown>, nameClaim: string, subject: string): string {
	const claimed = payload[nameClaim];
	const name = typeof claimed === "string" ? claimed.trim().slice(0, 128) : "";
	return name || subject.slice(0, 128);
}

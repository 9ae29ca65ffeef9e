// User Tokens: the sign-in's exchange of an ID token for one, and a credential that keeps one
// fresh by refreshing it before it ends (docs/operations.md, "User Tokens, the account and trace").
import { readBody, TwinRegistryError } from "./error.js";
import type { Fetch } from "./retry.js";

const origin = (baseUrl: string) => baseUrl.replace(/\/+$/, "");

// exchange_user_token, POST /token/exchange: an identity provider's ID token traded for a User
// Token of the user linked to its subject (made at the first exchange when the provider
// provisions users). It takes no credential, so it is a function of its own rather than a call
// of a client that holds one. The body and the answer are written out here rather than read
// from schema.d.ts, so that the helper does not depend on the generated path types; with the
// route in the document, `registry.post("/token/exchange", { body })` is typed as well.
export type TokenExchange = {
	// The service's origin, as in ClientOptions.
	baseUrl: string;
	// The account whose identity providers verify the token (a uuid).
	account: string;
	// The provider's ID token, as it came.
	subjectToken: string;
	subjectTokenType?: "urn:ietf:params:oauth:token-type:id_token" | "urn:ietf:params:oauth:token-type:jwt";
	// As create_user_token's: what the User Token may do, and when it should end at the latest.
	options?: ("create" | "refresh")[];
	validityTs?: number | null;
	fetch?: Fetch;
	headers?: Record<string, string>;
};

export type ExchangedToken = {
	// The User Token: `Authorization: Bearer <token>`, or createClient's credential.
	token: string;
	options: ("create" | "refresh")[];
	validity_ts: number;
	account: string;
	user: string;
	// True when this exchange made the user.
	provisioned: boolean;
};

// The answer of a 201; any refusal (401261 to 401266, 403101, 429101, 503261...) is thrown as a
// TwinRegistryError.
export async function exchangeToken(request: TokenExchange): Promise<ExchangedToken> {
	const { baseUrl, account, subjectToken, subjectTokenType, options, validityTs, headers } = request;
	const send = request.fetch ?? ((r: Request) => fetch(r));
	const body = {
		account,
		subject_token: subjectToken,
		...(subjectTokenType === undefined ? {} : { subject_token_type: subjectTokenType }),
		...(options === undefined ? {} : { options }),
		...(validityTs === undefined ? {} : { validity_ts: validityTs }),
	};
	const response = await send(
		new Request(`${origin(baseUrl)}/token/exchange`, {
			method: "POST",
			headers: { ...headers, "content-type": "application/json" },
			body: JSON.stringify(body),
		}),
	);
	const answer = await readBody(response);
	if (!response.ok) throw TwinRegistryError.of(response, answer);
	return answer as ExchangedToken;
}

// A User Token and when it ends, as create_user_token, exchangeToken and refresh_user_token
// answer them.
export type UserToken = { token: string; validity_ts: number };

export type UserTokenOptions = {
	// The service's origin, as in ClientOptions.
	baseUrl: string;
	// The token to start from; it needs the `refresh` option to be refreshed.
	token: UserToken;
	// Refresh this many seconds before validity_ts (300), or halfway through a shorter life.
	refreshBeforeSeconds?: number;
	// Called with each refreshed token, to keep it (a page's storage, say).
	onRefresh?: (token: UserToken) => void;
	fetch?: Fetch;
	// The clock in milliseconds; a test passes its own.
	now?: () => number;
};

// createClient's credential: a function that answers `Bearer <token>` for each request.
export type UserTokenCredential = (() => Promise<string>) & {
	// The token in use, and when it ends.
	readonly current: UserToken;
	// POST /token/refresh now; concurrent callers share one request.
	refresh(): Promise<UserToken>;
};

// A credential that refreshes its User Token (POST /token/refresh) once validity_ts is near, so a
// client holding it never sends an expired token. A refresh that fails while the token still
// works is tried again at the next request; once it has ended, the refusal is thrown. A refresh
// that gives no later validity_ts (the token's secret, or its parent, ends first) is the last:
// the token is then used until it ends.
export function userTokenCredential(options: UserTokenOptions): UserTokenCredential {
	const { baseUrl, refreshBeforeSeconds = 300, onRefresh } = options;
	const send = options.fetch ?? ((r: Request) => fetch(r));
	const now = options.now ?? Date.now;
	let current = options.token;
	// When to refresh, in seconds since the epoch; Infinity once refreshing gains nothing.
	let refreshAt = schedule(current);
	let pending: Promise<UserToken> | undefined;

	function schedule(token: UserToken): number {
		const life = token.validity_ts - now() / 1000;
		return token.validity_ts - Math.min(refreshBeforeSeconds, Math.max(0, life / 2));
	}

	async function refresh(): Promise<UserToken> {
		pending ??= (async () => {
			try {
				const response = await send(
					new Request(`${origin(baseUrl)}/token/refresh`, {
						method: "POST",
						headers: { authorization: `Bearer ${current.token}`, "content-type": "application/json" },
						body: "{}",
					}),
				);
				const answer = await readBody(response);
				if (!response.ok) throw TwinRegistryError.of(response, answer);
				const next = answer as UserToken;
				refreshAt = next.validity_ts > current.validity_ts ? schedule(next) : Infinity;
				current = next;
				onRefresh?.(next);
				return next;
			} finally {
				pending = undefined;
			}
		})();
		return pending;
	}

	const credential = async () => {
		const seconds = now() / 1000;
		if (seconds >= refreshAt) {
			try {
				await refresh();
			} catch (error) {
				if (now() / 1000 >= current.validity_ts) throw error;
			}
		}
		return `Bearer ${current.token}`;
	};
	return Object.defineProperties(credential, {
		current: { get: () => current, enumerable: true },
		refresh: { value: refresh },
	}) as UserTokenCredential;
}

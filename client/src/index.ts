// A typed client of the Twin Registry: the types are generated from the service's API document
// (schema.d.ts, by openapi-typescript), the requests are openapi-fetch's. This file adds what
// a generated client cannot know: the credential on every request, lists in a query as one
// comma-separated value (as the document states), answers unwrapped with every refusal thrown
// as a TwinRegistryError, scan_twins' cursor walked as an async iterator, and exchangeToken,
// the sign-in's trade of an ID token for a User Token.
import createFetchClient, { type Client, type FetchResponse, type MaybeOptionalInit } from "openapi-fetch";
import type { components, operations, paths } from "./schema";

export type { components, operations, paths };
export type Twin = components["schemas"]["Twin"];
export type User = components["schemas"]["User"];
export type Role = components["schemas"]["Role"];
export type UserSecret = components["schemas"]["UserSecret"];
export type Subscription = components["schemas"]["Subscription"];
export type ErrorEnvelope = components["schemas"]["Error"];

// The service's error envelope, thrown for every answer that is not a success.
export class TwinRegistryError extends Error {
	readonly name = "TwinRegistryError";
	readonly description: string;
	readonly details?: ErrorEnvelope["details"];

	constructor(
		readonly status: number,
		readonly subcode: number,
		readonly trace: string,
		description: string,
		details?: ErrorEnvelope["details"],
	) {
		super(`${status} ${subcode}: ${description} (trace ${trace})`);
		this.description = description;
		this.details = details;
	}

	// An answer that is not the envelope (a proxy's page, the platform's plain 405) keeps its
	// status, with subcode 0 and the request id from the header when there is one.
	static of(response: Response, body: unknown): TwinRegistryError {
		const envelope = body as Partial<ErrorEnvelope> | undefined;
		const trace = envelope?.trace ?? response.headers.get("x-request-id") ?? "";
		if (typeof envelope?.subcode === "number" && typeof envelope.description === "string") {
			return new TwinRegistryError(response.status, envelope.subcode, trace, envelope.description, envelope.details);
		}
		return new TwinRegistryError(response.status, 0, trace, typeof body === "string" && body ? body : response.statusText);
	}
}

type Method = "get" | "post" | "patch" | "put" | "delete";
type PathsWith<M extends Method> = { [P in keyof paths]: paths[P][M] extends undefined ? never : P }[keyof paths];
type Init<P extends keyof paths, M extends Method> = MaybeOptionalInit<paths[P], M>;
// The request options are optional exactly when the operation requires no parameter and no body.
type Args<I> = undefined extends I ? [init?: I & Record<string, unknown>] : [init: I & Record<string, unknown>];
type Data<P extends keyof paths, M extends Method, I> = NonNullable<FetchResponse<paths[P][M] & Record<string | number, any>, I, "application/json">["data"]>;
type Call<M extends Method> = <P extends PathsWith<M>, I extends Init<P, M>>(path: P, ...init: Args<I>) => Promise<Data<P, M, I>>;

export type ClientOptions = {
	// The service's origin, such as "https://registry.example.com".
	baseUrl: string;
	// A User Secret or a User Token; the bootstrap route takes "Bearer <ADMIN_TOKEN>".
	credential?: string;
	// Another fetch (a test's, or one with retries); the global one by default.
	fetch?: (request: Request) => Promise<Response>;
	headers?: Record<string, string>;
};

export type ScanQuery = NonNullable<operations["scan_twins"]["parameters"]["query"]>;

export type TwinRegistryClient = {
	get: Call<"get">;
	post: Call<"post">;
	patch: Call<"patch">;
	put: Call<"put">;
	delete: Call<"delete">;
	// Every twin scan_twins answers, page after page: uuids, or records with details: true.
	scanTwins(query?: Omit<ScanQuery, "cursor" | "details"> & { details?: false }): AsyncIterable<string>;
	scanTwins(query: Omit<ScanQuery, "cursor" | "details"> & { details: true }): AsyncIterable<Twin>;
	// The openapi-fetch client underneath: answers as { data, error, response }, nothing thrown.
	api: Client<paths>;
};

export function createClient(options: ClientOptions): TwinRegistryClient {
	const api = createFetchClient<paths>({
		baseUrl: options.baseUrl.replace(/\/+$/, ""),
		fetch: options.fetch,
		headers: { ...options.headers, ...(options.credential === undefined ? {} : { authorization: options.credential }) },
		querySerializer: { array: { style: "form", explode: false } },
	});

	const call = <M extends Method>(method: M) =>
		(async (path: string, init?: Record<string, unknown>) => {
			const { data, error, response } = await api.request(method, path as never, init as never);
			if (!response.ok) throw TwinRegistryError.of(response, error);
			return data;
		}) as unknown as Call<M>;
	const get = call("get");

	async function* scanTwins(query: Omit<ScanQuery, "cursor"> = {}): AsyncGenerator<string | Twin> {
		let cursor: string | undefined;
		do {
			const page = await get("/twins", { params: { query: { ...query, cursor } } });
			yield* page.twins;
			cursor = page.cursor ?? undefined;
		} while (cursor !== undefined);
	}

	return { get, post: call("post"), patch: call("patch"), put: call("put"), delete: call("delete"), scanTwins: scanTwins as TwinRegistryClient["scanTwins"], api };
}

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
	fetch?: (request: Request) => Promise<Response>;
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
		new Request(`${baseUrl.replace(/\/+$/, "")}/token/exchange`, {
			method: "POST",
			headers: { ...headers, "content-type": "application/json" },
			body: JSON.stringify(body),
		}),
	);
	const text = await response.text();
	let answer: unknown = text;
	try {
		answer = JSON.parse(text);
	} catch {
		// Not JSON: kept as text for the error.
	}
	if (!response.ok) throw TwinRegistryError.of(response, answer);
	return answer as ExchangedToken;
}

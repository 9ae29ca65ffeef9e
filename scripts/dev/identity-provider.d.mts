export const DEFAULT_PORT: number;
export const DEFAULT_AUDIENCE: string;

export type IdentityProvider = {
	// Its origin, http://127.0.0.1:<port>: the `iss` of its tokens.
	issuer: string;
	audience: string;
	algorithm: "RS256" | "ES256" | "EdDSA";
	jwksUri: string;
	// A signed ID token for `sub`, with any other claims, valid `lifetime` seconds (its default otherwise).
	token(claims: { sub: string; lifetime?: number; [claim: string]: unknown }): Promise<string>;
	stop(): Promise<void>;
};

export function startIdentityProvider(options?: {
	port?: number;
	audience?: string;
	algorithm?: "RS256" | "ES256" | "EdDSA";
	lifetime?: number;
}): Promise<IdentityProvider>;

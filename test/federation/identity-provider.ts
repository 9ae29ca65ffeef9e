// A test OpenID Connect identity provider: key pairs of the three algorithms the service takes,
// their public JWK Set (inline, or hosted by the test receiver for a provider's jwks_uri), ID
// tokens signed as a real provider signs them, and the forged tokens a verifier must refuse.
import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, importJWK, type JWK, SignJWT } from "jose";
import { received, receiver } from "../support/webhooks";

export type Alg = "RS256" | "ES256" | "EdDSA";

export type Key = {
	kid: string;
	alg: Alg;
	privateKey: CryptoKey;
	publicKey: CryptoKey;
	publicJwk: JWK;
	privateJwk: JWK;
};

export type Claims = Record<string, unknown>;

// `kid: null` leaves the header's kid out; `key` signs with a key the provider does not publish;
// `header` adds or replaces header parameters (alg included).
export type TokenOptions = { kid?: string | null; key?: Key; header?: Record<string, unknown> };

export const nowSeconds = () => Math.floor(Date.now() / 1000);

const text = new TextEncoder();
export const encodeSegment = (value: unknown) =>
	btoa(String.fromCharCode(...text.encode(typeof value === "string" ? value : JSON.stringify(value))))
		.replaceAll("+", "-")
		.replaceAll("/", "_")
		.replace(/=+$/, "");

// A new key pair, private half extractable, its public JWK carrying `kid` (and no `alg`, as
// many providers publish them).
export async function makeKey(alg: Alg, kid = `${alg.toLowerCase()}-${crypto.randomUUID().slice(0, 8)}`): Promise<Key> {
	const options = alg === "RS256" ? { modulusLength: 2048 } : alg === "EdDSA" ? { crv: "Ed25519" } : {};
	const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true, ...options });
	return {
		kid,
		alg,
		privateKey,
		publicKey,
		publicJwk: { ...(await exportJWK(publicKey)), kid },
		privateJwk: { ...(await exportJWK(privateKey)), kid },
	};
}

// What the receiver serves at /jwks/<id>: a set, a status, a redirect or raw text.
export type Hosted = { jwks?: unknown; status?: number; redirect?: boolean; text?: string };

export async function host(id: string, hosted: Hosted) {
	const res = await fetch(`${receiver()}/jwks/${id}`, { method: "PUT", body: JSON.stringify(hosted) });
	await res.arrayBuffer();
	if (res.status !== 204) throw new Error(`the receiver did not store ${id}: ${res.status}`);
}

export class IdentityProvider {
	// The receiver's name for this provider's set, unique per provider.
	readonly id = `jwks-${crypto.randomUUID()}`;
	keys: Key[] = [];

	constructor(
		readonly issuer: string,
		readonly audience: string,
	) {}

	// A provider with one key per algorithm given, in that order.
	static async create(
		algs: Alg[] = ["RS256"],
		issuer = `https://idp-${crypto.randomUUID().slice(0, 8)}.example.com/`,
		audience = `client-${crypto.randomUUID().slice(0, 8)}`,
	) {
		const idp = new IdentityProvider(issuer, audience);
		for (const alg of algs) await idp.addKey(alg);
		return idp;
	}

	get jwksUri() {
		return `${receiver()}/jwks/${this.id}`;
	}

	jwks() {
		return { keys: this.keys.map((key) => key.publicJwk) };
	}

	key(alg?: Alg): Key {
		const key = alg ? this.keys.find((k) => k.alg === alg) : this.keys[0];
		if (!key) throw new Error(`no ${alg ?? ""} key`);
		return key;
	}

	async addKey(alg: Alg, kid?: string) {
		const key = await makeKey(alg, kid);
		this.keys.push(key);
		return key;
	}

	dropKey(kid: string) {
		this.keys = this.keys.filter((key) => key.kid !== kid);
	}

	// Puts the current set on the receiver, where jwksUri finds it.
	publish() {
		return host(this.id, { jwks: this.jwks() });
	}

	// Has the receiver answer the set's GET otherwise: a status, a redirect, raw text.
	serve(hosted: Hosted) {
		return host(this.id, hosted);
	}

	// How many times the set was fetched from the receiver.
	async fetches() {
		return (await received(this.id)).length;
	}

	// The claims of an ID token for `sub`, valid for an hour from now; a claim given as
	// undefined is left out.
	claims(extra: Claims = {}): Claims {
		const now = nowSeconds();
		const all: Claims = { iss: this.issuer, aud: this.audience, sub: "subject-1", iat: now, exp: now + 3600, ...extra };
		return Object.fromEntries(Object.entries(all).filter(([, value]) => value !== undefined));
	}

	// An ID token signed by the first key (or `options.key`), as the provider issues it.
	idToken(extra: Claims = {}, options: TokenOptions = {}) {
		const key = options.key ?? this.keys[0]!;
		const kid = options.kid === undefined ? key.kid : options.kid;
		const header = { alg: key.alg, typ: "JWT", ...(kid === null ? {} : { kid }), ...options.header };
		return new SignJWT(this.claims(extra) as never).setProtectedHeader(header as never).sign(key.privateKey);
	}

	// ---- Forged tokens ----

	// alg "none", no signature.
	unsigned(extra: Claims = {}) {
		return `${encodeSegment({ alg: "none", typ: "JWT" })}.${encodeSegment(this.claims(extra))}.`;
	}

	// The alg-confusion attack: HMAC-SHA256 keyed with the bytes of the RSA key's public PEM,
	// which a verifier taking `alg` from the token would check against the "key" it holds. With
	// `headerAlg` "RS256" the header claims the RSA algorithm over the same HMAC signature.
	async hmacWithPublicKey(extra: Claims = {}, headerAlg: "HS256" | "RS256" = "HS256") {
		const key = this.key("RS256");
		const secret = text.encode(await exportSPKI(key.publicKey));
		if (headerAlg === "HS256")
			return new SignJWT(this.claims(extra) as never)
				.setProtectedHeader({ alg: "HS256", typ: "JWT", kid: key.kid })
				.sign(secret);
		const input = `${encodeSegment({ alg: "RS256", typ: "JWT", kid: key.kid })}.${encodeSegment(this.claims(extra))}`;
		const hmac = await crypto.subtle.importKey("raw", secret, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
		const signature = new Uint8Array(await crypto.subtle.sign("HMAC", hmac, text.encode(input)));
		return `${input}.${btoa(String.fromCharCode(...signature))
			.replaceAll("+", "-")
			.replaceAll("/", "_")
			.replace(/=+$/, "")}`;
	}

	// Signed by the provider's own RSA key under an algorithm the service does not take.
	async otherRsaAlg(alg: "PS256" | "RS512", extra: Claims = {}) {
		const key = this.key("RS256");
		const { alg: _, ...jwk } = key.privateJwk;
		const privateKey = await importJWK(jwk, alg);
		return new SignJWT(this.claims(extra) as never)
			.setProtectedHeader({ alg, typ: "JWT", kid: key.kid })
			.sign(privateKey);
	}

	// Well signed, with a critical header extension the verifier does not know.
	withCrit(extra: Claims = {}) {
		const key = this.keys[0]!;
		return new SignJWT(this.claims(extra) as never)
			.setProtectedHeader({ alg: key.alg, typ: "JWT", kid: key.kid, crit: ["x-test"], "x-test": true } as never)
			.sign(key.privateKey, { crit: { "x-test": true } });
	}
}

// Strings that are not a compact JWS with JSON-object header and payload.
export function notJws(idp: IdentityProvider): string[] {
	const header = encodeSegment({ alg: "RS256", typ: "JWT", kid: idp.keys[0]?.kid });
	const payload = encodeSegment(idp.claims());
	return [
		"not-a-token",
		"a.b.c",
		`${header}.${payload}`,
		`${header}.${payload}.sig.extra`,
		// Five segments: the shape of a JWE.
		`${header}.a.b.c.d`,
		`${encodeSegment([1, 2])}.${payload}.c2ln`,
		`${header}.${encodeSegment("not json")}.c2ln`,
		`${header}.${encodeSegment([1])}.c2ln`,
	];
}

// `npm run identity-provider` (usage below, or `-- --help`):
// A stand-in OpenID Connect identity provider for the sign-in example (docs/sign-in.md) and its
// browser test: a key pair made at start and never written anywhere, its public half served as
// a JWK Set at /.well-known/jwks.json, and an ID token for whoever asks at
// /token?sub=alice&name=Alice (iss its own origin, aud the audience, an hour's validity). It
// listens on 127.0.0.1 only and checks nobody: it is for trying the sign-in on one machine, and
// an account that trusts it lets anyone on that machine sign in as anyone. Every answer allows
// any origin, so that a page served elsewhere can fetch its token. The example page itself is
// served at /, as a convenience: it calls the API on its own origin, as a real front end would.
// The browser test starts it in-process with startIdentityProvider().
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { pathToFileURL } from "node:url";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { parseCli } from "../cli.mjs";
import { findServer } from "./served.mjs";

export const DEFAULT_PORT = 8790;
export const DEFAULT_AUDIENCE = "twin-registry-example";
const PAGE = new URL("../../docs/examples/sign-in.html", import.meta.url);

// Claims a caller may set through /token's query, beyond sub: the ones a provider's
// `dict_claims` or `provisioning.name_claim` commonly name.
const EXTRA_CLAIMS = ["name", "email", "groups", "site", "nonce"];

export async function startIdentityProvider({
	port = 0,
	audience = DEFAULT_AUDIENCE,
	algorithm = "RS256",
	lifetime = 3600,
} = {}) {
	const { publicKey, privateKey } = await generateKeyPair(algorithm, { extractable: true });
	const kid = `local-${Date.now().toString(36)}`;
	const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid, alg: algorithm, use: "sig" }] };
	let issuer = "";

	async function token({ sub, lifetime: seconds = lifetime, ...claims }) {
		if (typeof sub !== "string" || !sub) throw new Error("an ID token needs a subject (sub)");
		const now = Math.floor(Date.now() / 1000);
		return new SignJWT(claims)
			.setProtectedHeader({ alg: algorithm, kid, typ: "JWT" })
			.setIssuer(issuer)
			.setAudience(audience)
			.setSubject(sub)
			.setIssuedAt(now)
			.setExpirationTime(now + seconds)
			.sign(privateKey);
	}

	const server = createServer(async (req, res) => {
		const cors = {
			"access-control-allow-origin": "*",
			"access-control-allow-methods": "GET, OPTIONS",
			"access-control-allow-headers": "content-type",
			"cache-control": "no-store",
		};
		const answer = (status, body, type = "application/json") =>
			res
				.writeHead(status, { ...cors, "content-type": type })
				.end(typeof body === "string" ? body : JSON.stringify(body));
		const url = new URL(req.url ?? "/", issuer);
		if (req.method === "OPTIONS") return res.writeHead(204, cors).end();
		if (req.method !== "GET") return answer(405, { error: "only GET" });
		if (url.pathname === "/.well-known/jwks.json") return answer(200, jwks);
		if (url.pathname === "/token") {
			const sub = url.searchParams.get("sub");
			if (!sub)
				return answer(400, { error: "invalid_request", error_description: "give the subject: /token?sub=alice" });
			const claims = Object.fromEntries(
				EXTRA_CLAIMS.flatMap((name) => (url.searchParams.has(name) ? [[name, url.searchParams.get(name)]] : [])),
			);
			return answer(200, { id_token: await token({ sub, ...claims }), expires_in: lifetime });
		}
		if (url.pathname === "/" || url.pathname === "/sign-in.html")
			return answer(200, readFileSync(PAGE, "utf8"), "text/html; charset=utf-8");
		return answer(404, { error: "not found" });
	});
	await new Promise((resolve, reject) => {
		server.once("error", reject);
		server.listen(port, "127.0.0.1", resolve);
	});
	issuer = `http://127.0.0.1:${server.address().port}`;
	return {
		issuer,
		audience,
		algorithm,
		jwksUri: `${issuer}/.well-known/jwks.json`,
		token,
		stop: () => new Promise((resolve) => server.close(() => resolve())),
	};
}

// Run as a script, not imported.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
	const { values } = parseCli({
		usage: `
usage: npm run identity-provider [-- options]

A stand-in OpenID Connect identity provider on 127.0.0.1 for trying the sign-in example
(docs/sign-in.md): it signs an ID token for anyone who asks, so trust it only locally.

  --port N          its port (default: ${DEFAULT_PORT})
  --audience A      the audience of its tokens (default: ${DEFAULT_AUDIENCE})
  --alg ALG         RS256, ES256 or EdDSA (default: RS256)
  -h, --help        this text
`,
		options: {
			port: { type: "string", default: String(DEFAULT_PORT) },
			audience: { type: "string", default: DEFAULT_AUDIENCE },
			alg: { type: "string", default: "RS256" },
		},
	});
	const provider = await startIdentityProvider({
		port: Number(values.port),
		audience: values.audience,
		algorithm: values.alg,
	}).catch((error) => {
		console.error(`Cannot listen on 127.0.0.1:${values.port}: ${error.message}`);
		process.exit(1);
	});
	const body = {
		issuer: provider.issuer,
		audiences: [provider.audience],
		algorithms: [provider.algorithm],
		jwks_uri: provider.jwksUri,
	};
	console.log(`identity provider  ${provider.issuer}  (keys ${provider.jwksUri}, ${provider.algorithm})
audience           ${provider.audience}
an ID token        curl -s '${provider.issuer}/token?sub=alice&name=Alice'
the example page   ${provider.issuer}/

Trust it in an account (with \`npm start\` running and its administrator's secret in $ADMIN):
curl -s -X POST ${findServer()}/account/identity-providers -H "Authorization: $ADMIN" \\
    -d '${JSON.stringify({ ...body, provisioning: { role: "<role uuid>" } })}'

Its key is new at every start; the service fetches the new JWK Set when it meets the new key id.`);
	const stop = () => provider.stop().then(() => process.exit(0));
	process.on("SIGINT", stop);
	process.on("SIGTERM", stop);
}

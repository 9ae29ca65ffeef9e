// `npm run webhook-listener`: a local receiver for developers (usage below, or `-- --help`).
// Listens on 127.0.0.1, subscribes itself to a topic on the server, verifies each message's
// hash and Standard Webhooks signature, prints what arrives, confirms the subscription (unless
// --no-confirm), and shows the subscription's state and recorded delivery attempts after each
// message. Ctrl-C shows them once more and unsubscribes. `--account` subscribes to another
// account's topic (it must have granted it to the caller's account). `--list` only prints the
// account's subscriptions and their states.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { createServer } from "node:http";
import { blake2b } from "@noble/hashes/blake2.js";
import { parseCli } from "../cli.mjs";
import { readSecretFile } from "./secrets.mjs";
import { findServer } from "./served.mjs";

const USAGE = `
usage: TWIN_SECRET=<API key> npm run webhook-listener [-- options]

Subscribes a local receiver to a topic of the running \`npm start\` (found on whatever port it
serves), verifies and prints each message, and unsubscribes on Ctrl-C.

  --topic T                  the topic (default: twins)
  --account A                another account's topic, granted to the caller's account
  --port N                   the receiver's port on 127.0.0.1 (default: any free port)
  --url URL                  another server than the running \`npm start\`
  --secret-file F            read the API key from file F instead of TWIN_SECRET
  --client-secret-file F     the subscription's client_secret, from file F (default: random)
  --no-confirm               leave the subscription pending, and print how to confirm it
  --list                     print the account's subscriptions and their states, and exit
  -h, --help                 this text

The API key (\`npm run bootstrap\` prints one) comes from --secret-file or TWIN_SECRET, never
from the command line, which npm prints.
`;

const { values } = parseCli({
	usage: USAGE,
	options: {
		url: { type: "string" },
		"secret-file": { type: "string" },
		topic: { type: "string", default: "twins" },
		account: { type: "string" },
		port: { type: "string", default: "0" },
		"client-secret-file": { type: "string" },
		"no-confirm": { type: "boolean", default: false },
		list: { type: "boolean", default: false },
		// Refused below with a pointer to the ways that keep secrets out of npm's banner.
		secret: { type: "string" },
		"client-secret": { type: "string" },
	},
});
for (const option of ["secret", "client-secret"]) {
	if (values[option] === undefined) continue;
	console.error(
		`--${option} is not taken: npm prints the command line. Use ${option === "secret" ? "TWIN_SECRET or " : ""}--${option}-file FILE.`,
	);
	process.exit(2);
}
const secret = readSecretFile(values["secret-file"], "--secret-file") ?? process.env.TWIN_SECRET;
if (!secret) {
	console.error("No API key: set TWIN_SECRET or pass --secret-file FILE; `npm run bootstrap` prints one.");
	process.exit(1);
}

const base = findServer(values.url);
const clientSecret =
	readSecretFile(values["client-secret-file"], "--client-secret-file") ?? randomBytes(12).toString("base64url");
let resolveServerSecret;
const serverSecret = new Promise((resolve) => (resolveServerSecret = resolve));
let manageUrl;
let subscription;

function unreachable(error) {
	console.error(`Cannot reach ${base}: ${error.cause?.message ?? error.message}. Is \`npm start\` running?`);
	process.exit(1);
}

async function api(path) {
	const res = await fetch(`${base}${path}`, { headers: { authorization: secret } });
	return res.json();
}

// The owner's view: state, failure reason and each recorded attempt, newest first.
async function showState() {
	if (!subscription) return;
	const s = await api(`/notifications/webhooks/subscriptions/${subscription}`);
	console.log(
		`subscription ${subscription}: ${s.status}, ${s.attempts} attempt(s)${s.failure_reason ? `, failed: ${s.failure_reason}` : ""}`,
	);
	const { deliveries = [] } = await api(`/notifications/webhooks/subscriptions/${subscription}/deliveries`);
	for (const d of deliveries) {
		const next = d.next_attempt_ts ? `, next ${new Date(d.next_attempt_ts * 1000).toISOString()}` : "";
		console.log(
			`  #${d.attempt} ${new Date(d.attempted_ts * 1000).toISOString()} ${d.outcome} ${d.detail} (${d.duration_ms} ms${next})`,
		);
	}
}

if (values.list) {
	const { subscriptions = {} } = await api("/notifications/webhooks").catch(unreachable);
	for (const [uuid, s] of Object.entries(subscriptions))
		console.log(`${uuid}  ${s.status.padEnd(12)} ${s.topic}  ${s.callback_url}`);
	process.exit(0);
}

// The recipe of docs/notifications.md: keyed BLAKE2b-256 over the compact JSON of the message
// without `hash`; Standard Webhooks' HMAC-SHA256 over "id.timestamp.body"; both keyed with the
// UTF-8 of client_secret + server_secret.
function verify(body, headers, key) {
	const { hash, ...message } = JSON.parse(body);
	const expectedHash = Buffer.from(blake2b(Buffer.from(JSON.stringify(message)), { key, dkLen: 32 })).toString("hex");
	const signed = `${headers["webhook-id"]}.${headers["webhook-timestamp"]}.${body}`;
	const expectedSignature = `v1,${createHmac("sha256", key).update(signed).digest("base64")}`;
	const same = (a, b) =>
		typeof a === "string" && a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
	// After a key rotation the header carries one signature per key, space-separated.
	const signatures = (headers["webhook-signature"] ?? "").split(" ");
	return { message, hashOk: same(hash, expectedHash), signatureOk: signatures.some((s) => same(s, expectedSignature)) };
}

const server = createServer(async (req, res) => {
	let body = "";
	for await (const chunk of req) body += chunk;
	res.writeHead(200).end();
	const key = Buffer.from(clientSecret + (await serverSecret));
	let verified;
	try {
		verified = verify(body, req.headers, key);
	} catch {
		console.log(`✗ ${req.method} ${req.url}: not a JSON message\n${body}`);
		return;
	}
	const { message, hashOk, signatureOk } = verified;
	console.log(`\n${hashOk ? "✓" : "✗"} hash  ${signatureOk ? "✓" : "✗"} signature  ${message.type} ${message.message}`);
	console.log(JSON.stringify(message, null, 2));
	if (message.type === "Confirmation") {
		manageUrl = message.confirmation_url;
		if (values["no-confirm"]) return console.log(`not confirming; confirm with: curl -s '${manageUrl}'`);
		const confirmed = await fetch(manageUrl);
		console.log(`confirmed: ${confirmed.status} ${await confirmed.text()}`);
	}
	await showState();
});

server.listen(Number(values.port), "127.0.0.1", async () => {
	const callback = `http://127.0.0.1:${server.address().port}/`;
	const res = await fetch(`${base}/notifications/webhooks`, {
		method: "POST",
		headers: { authorization: secret, "content-type": "application/json" },
		body: JSON.stringify({
			callback_url: callback,
			topic: values.topic,
			client_secret: clientSecret,
			account: values.account,
		}),
	}).catch(unreachable);
	const answer = await res.json();
	if (res.status !== 201) {
		console.error(`webhook_subscribe answered ${res.status}: ${JSON.stringify(answer)}`);
		process.exit(1);
	}
	resolveServerSecret(answer.server_secret);
	subscription = answer.subscription.uuid;
	const of = values.account ? ` of account ${values.account}` : "";
	console.log(`listening on ${callback} for topic ${values.topic}${of}; subscription ${answer.subscription.uuid}`);
});

process.on("SIGINT", async () => {
	await showState().catch(() => undefined);
	if (manageUrl) {
		const gone = await fetch(manageUrl, { method: "DELETE" }).catch(() => undefined);
		console.log(`\nunsubscribed: ${gone?.status ?? "server unreachable"}`);
	}
	process.exit(0);
});

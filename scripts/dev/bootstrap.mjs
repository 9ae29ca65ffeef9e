// `npm run bootstrap`: creates an account through create_account and prints its
// administrator's secret. Without --url it calls the `npm start` running in this checkout, on
// whatever port, or port 8787 (findServer() in served.mjs).
import { writeFileSync } from "node:fs";
import { parseCli } from "../cli.mjs";
import { readDevVars } from "./dev-vars.mjs";
import { findServer } from "./served.mjs";
import { readSecretFile } from "./secrets.mjs";

const USAGE = `
usage: npm run bootstrap [-- options]
       npm run -s bootstrap -- --json      (-s: without npm's banner, stdout is only the JSON)

Creates an account on the running \`npm start\` (found on whatever port it serves) and prints
its administrator's secret, shown only once.

  --json               print only {"account","user","role","secret"} as JSON
  --out FILE           write that JSON to FILE (readable by its owner only) instead of printing it
  --name NAME          the new account's name
  --url URL            another server, such as a deployed service
  --admin-token-file F read the admin token from file F
  -h, --help           this text

The admin token comes from --admin-token-file, else ADMIN_TOKEN in the environment, else the
.dev.vars that \`npm start\` wrote. It is never taken on the command line, which npm prints.
`;

const { values } = parseCli({
	usage: USAGE,
	options: {
		url: { type: "string" },
		"admin-token-file": { type: "string" },
		// Refused below with a pointer to the ways that keep the token out of npm's banner.
		"admin-token": { type: "string" },
		name: { type: "string" },
		json: { type: "boolean", default: false },
		out: { type: "string" },
	},
});

if (values["admin-token"] !== undefined) {
	console.error(
		"--admin-token is not taken: npm prints the command line. Set ADMIN_TOKEN in the environment or pass --admin-token-file FILE.",
	);
	process.exit(2);
}
const token =
	readSecretFile(values["admin-token-file"], "--admin-token-file") ??
	(process.env.ADMIN_TOKEN || readDevVars().ADMIN_TOKEN);
if (!token) {
	console.error(
		"No admin token: set ADMIN_TOKEN, pass --admin-token-file FILE, or run `npm start` once to create .dev.vars",
	);
	process.exit(1);
}

const base = findServer(values.url);
let response;
try {
	response = await fetch(`${base}/admin/accounts`, {
		method: "POST",
		headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
		body: JSON.stringify(values.name ? { name: values.name } : {}),
	});
} catch (error) {
	console.error(`Cannot reach ${base}: ${error.cause?.message ?? error.message}. Is \`npm start\` running?`);
	process.exit(1);
}
const body = await response.json().catch(() => ({}));
if (response.status !== 201) {
	console.error(`create_account answered ${response.status}: ${JSON.stringify(body)}`);
	process.exit(1);
}

const { account, user, role, secret } = body;
const json = JSON.stringify({ account, user, role, secret });
if (values.out) {
	writeFileSync(values.out, `${json}\n`, { mode: 0o600 });
	console.error(`account ${account}: its administrator's secret is in ${values.out}`);
} else if (values.json) {
	console.log(json);
} else {
	console.log(`account  ${account}\nuser     ${user}\nrole     ${role}\nsecret   ${secret}\n`);
	console.log("The secret is shown only now. Try it:");
	console.log(`curl -s -H 'Authorization: ${secret}' ${base}/whoami`);
}

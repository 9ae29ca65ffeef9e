// `npm run bootstrap [-- --json] [-- --url URL --admin-token TOKEN] [-- --name NAME]`:
// creates an account through create_account and prints its administrator's secret. Without
// --url it calls the `npm start` running in this checkout, on whatever port, or port 8787.
import { parseArgs } from "node:util";
import { readDevVars } from "./dev-vars.mjs";
import { readServed } from "./served.mjs";

const { values } = parseArgs({
	options: {
		url: { type: "string", default: readServed() ?? "http://127.0.0.1:8787" },
		"admin-token": { type: "string" },
		name: { type: "string" },
		json: { type: "boolean", default: false },
	},
});

const token = values["admin-token"] ?? process.env.ADMIN_TOKEN ?? readDevVars().ADMIN_TOKEN;
if (!token) {
	console.error("No admin token: pass --admin-token, set ADMIN_TOKEN, or run `npm start` once to create .dev.vars");
	process.exit(1);
}

const base = values.url.replace(/\/+$/, "");
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
if (values.json) {
	console.log(JSON.stringify({ account, user, role, secret }));
} else {
	console.log(`account  ${account}\nuser     ${user}\nrole     ${role}\nsecret   ${secret}\n`);
	console.log("The secret is shown only now. Try it:");
	console.log(`curl -s -H 'Authorization: ${secret}' ${base}/whoami`);
}

// `npm run load [-- --seconds N]`: a bounded mixed workload (at most 60 s) against a fresh
// `wrangler dev`, driven from a second process. Reports requests, errors by status, p50, p99.
// Its server takes a free port unless --port names one.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseCli } from "../cli.mjs";
import { startDevServer } from "../test/dev-server.mjs";

const { values } = parseCli({
	usage: `
usage: npm run load [-- options]

A bounded mixed workload against a fresh \`wrangler dev\` of its own (state in a temporary
folder), driven from a second process; prints requests, statuses, p50 and p99.

  --seconds N       how long, at most 60 (default: 30)
  --concurrency N   connections, at most 64 (default: 8)
  --port N          its server's port (default: a free port)
  -h, --help        this text
`,
	options: {
		seconds: { type: "string", default: "30" },
		concurrency: { type: "string", default: "8" },
		port: { type: "string" },
	},
});
const seconds = Math.min(60, Math.max(1, Number(values.seconds)));
const concurrency = Math.min(64, Math.max(1, Number(values.concurrency)));

const state = mkdtempSync(join(tmpdir(), "twin-registry-load-"));
const adminToken = randomBytes(32).toString("base64url");
const server = await startDevServer({
	port: values.port === undefined ? undefined : Number(values.port),
	persistTo: state,
	vars: { ADMIN_TOKEN: adminToken, CALLBACK_POLICY: "any" },
});
try {
	const json = async (method, path, secret, body) => {
		const res = await fetch(server.url + path, {
			method,
			headers: { authorization: secret, "content-type": "application/json" },
			body: body && JSON.stringify(body),
		});
		return res.json();
	};
	const admin = await json("POST", "/admin/accounts", `Bearer ${adminToken}`, {});
	const auth = { authorization: admin.secret, "content-type": "application/json" };
	const twins = [];
	for (let i = 0; i < 200; i++)
		twins.push(
			(await json("POST", "/twins", admin.secret, { description: { i, site: i % 2 ? "north" : "south" } })).uuid,
		);
	const role = await json("POST", "/roles", admin.secret, {
		name: "Load",
		statement: { effect: "allow", actions: ["who_am_i"] },
	});

	// Reads dominate, as they would in use; writes create, describe and terminate twins, and
	// make roles and subscriptions, which exercise the Durable Object and the queue.
	const requests = [
		{ path: "/whoami", headers: auth, weight: 3 },
		{ path: "/twins?count=100", headers: auth, weight: 3 },
		{ path: "/twins?count=50&details=true&match=TWIN.site%20%3D%3D%20'north'", headers: auth, weight: 3 },
		{ path: `/twins/${twins[0]}`, headers: auth, weight: 3 },
		{ path: "/users", headers: auth, weight: 1 },
		{ path: `/roles/${role.uuid}`, headers: auth, weight: 1 },
		{ method: "POST", path: "/twins", headers: auth, body: JSON.stringify({ description: { load: true } }), weight: 2 },
		{
			method: "PATCH",
			path: `/twins/${twins[1]}`,
			headers: auth,
			body: JSON.stringify({ description: { touched: true } }),
			weight: 1,
		},
		{ method: "POST", path: "/roles", headers: auth, body: JSON.stringify({ name: "Burst" }), weight: 1 },
		{
			method: "POST",
			path: "/notifications/webhooks",
			headers: auth,
			body: JSON.stringify({ topic: "load", callback_url: "http://127.0.0.1:9/" }),
			weight: 1,
		},
		{ path: "/twins?count=0", headers: auth, weight: 1 },
		{ path: "/whoami", headers: { authorization: "wrong" }, weight: 1 },
	];
	const client = fileURLToPath(new URL("./load-client.mjs", import.meta.url));
	const { stdout } = await promisify(execFile)(process.execPath, [
		client,
		JSON.stringify({ url: server.url, seconds, concurrency, requests }),
	]);
	const report = JSON.parse(stdout);
	const errors = Object.entries(report.statuses).filter(([status]) => !/^2/.test(status));
	console.log(`\nmixed load against wrangler dev: ${concurrency} connections for ${seconds} s from a second process`);
	console.log(`requests      ${report.requests} (${report.requests_per_second}/s)`);
	console.log(`by status     ${JSON.stringify(report.statuses)}`);
	console.log(
		`non-2xx       ${errors.map(([s, n]) => `${s}: ${n}`).join(", ") || "none"} (400 and 401 are the invalid requests in the mix; 429 the wrong secrets past the per-address limit of failed authentications)`,
	);
	console.log(`latency       p50 ${report.p50_ms} ms, p99 ${report.p99_ms} ms`);
	if (Object.keys(report.statuses).some((status) => status === "network" || Number(status) >= 500))
		process.exitCode = 1;
} finally {
	server.stop();
	rmSync(state, { recursive: true, force: true });
}

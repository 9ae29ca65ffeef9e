// The shards part of `npm run bench` (`-- --only shards` runs it alone): what spreading accounts
// over two D1 databases costs a request, against the same Worker serving one (docs/scaling.md).
// Each configuration gets its own `wrangler dev` and state, one after the other in the same run:
// the default map (SHARDS "0-127:DB_0,128-255:DB_1") and every bucket on DB_0. In each, accounts
// made through create_account attach one public identity to some of their twins, and a reader
// whose role sees other accounts' identities measures /whoami and scan_twins throughput,
// resolve_twin_identity with context=system (the directory of public identities), and the
// directory's lag: from a new public identity's answer to the first resolve that finds it.
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { rmSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startDevServer } from "../test/dev-server.mjs";
import { call, timed } from "./api.mjs";

const CONFIGS = [
	["two shards", undefined],
	["one shard", "0-255:DB_0"],
];
const ACCOUNTS = 6;
const TWINS = 100;
const IDENTITY = "RFID#bench";
const SAMPLES = 100;
const LAG_SAMPLES = 50;
const SECONDS = 10;

async function load(url, path, secret) {
	const { stdout } = await promisify(execFile)(process.execPath, [
		fileURLToPath(new URL("./load-client.mjs", import.meta.url)),
		JSON.stringify({ url, seconds: SECONDS, concurrency: 8, requests: [{ path, headers: { authorization: secret } }] }),
	]);
	return JSON.parse(stdout);
}

async function account(url, token) {
	const res = await fetch(`${url}/admin/accounts`, { method: "POST", headers: { authorization: `Bearer ${token}` } });
	if (res.status !== 201) throw new Error(`create_account: ${res.status}`);
	return res.json();
}

async function measure(name, shards) {
	const state = fileURLToPath(new URL(`../../.wrangler/bench-shards-${name.replace(" ", "-")}`, import.meta.url));
	rmSync(state, { recursive: true, force: true });
	const token = randomBytes(32).toString("base64url");
	const server = await startDevServer({
		persistTo: state,
		vars: { ADMIN_TOKEN: token, ...(shards ? { SHARDS: shards } : {}) },
	});
	try {
		const { url } = server;
		const accounts = [];
		for (let i = 0; i < ACCOUNTS; i++) accounts.push(await account(url, token));
		for (const { secret } of accounts) {
			for (let t = 0; t < TWINS; t++) {
				const twin = (await call(url, secret, "POST", "/twins", {})).uuid;
				if (t % 10 === 0)
					await call(url, secret, "POST", `/twins/${twin}/identities`, {
						identities: { [IDENTITY]: { visibility: "true" } },
					});
			}
		}
		// The reader: the first account's user whose role sees every twin and identity.
		const [first] = accounts;
		const role = await call(url, first.secret, "POST", "/roles", {
			name: "reader",
			rules: { twin: "true", identity: "true" },
		});
		const user = await call(url, first.secret, "POST", "/users", { name: "reader", role: role.uuid });
		const pin = await call(url, first.secret, "POST", `/users/${user.uuid}/secrets`, {});
		const reader = (await call(url, null, "POST", `/secrets/${first.account}/${pin.pin}`)).secret;

		const resolve = `/resolve/${encodeURIComponent(IDENTITY)}?context=system`;
		const samples = [];
		for (let i = 0; i < SAMPLES; i++) samples.push(await timed(url, reader, "GET", resolve));
		const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
		const found = samples[0].answer.twins.length;
		return {
			directory_lag: await directoryLag(url, accounts[1], reader),
			accounts_per_shard: countBy(
				accounts.map((a) => (Number.parseInt(a.account.slice(0, 2), 16) < 128 || shards ? "DB_0" : "DB_1")),
			),
			whoami: await load(url, "/whoami", reader),
			scan: await load(url, "/twins?count=100&details=true", reader),
			resolve_system: {
				twins_found: found,
				queries: samples[0].queries,
				rows_read: samples[0].rowsRead,
				p50_ms: +ms[Math.floor(ms.length / 2)].toFixed(2),
				p95_ms: +ms[Math.floor(ms.length * 0.95)].toFixed(2),
			},
		};
	} finally {
		server.stop();
	}
}

// Another account attaches a public identity of a new name to one of its twins; the reader
// resolves it in the system context, back to back, from the write's answer until it is found.
async function directoryLag(url, writer, reader) {
	const twin = await call(url, writer.secret, "POST", "/twins", {});
	const lags = [];
	const polls = [];
	for (let i = 0; i < LAG_SAMPLES; i++) {
		const identity = `LAG#${randomBytes(6).toString("hex")}`;
		await call(url, writer.secret, "POST", `/twins/${twin.uuid}/identities`, {
			identities: { [identity]: { visibility: "true" } },
		});
		const answered = performance.now();
		const path = `/resolve/${encodeURIComponent(identity)}?context=system`;
		for (let poll = 1; ; poll++) {
			const { answer } = await timed(url, reader, "GET", path);
			if (answer.twins.length > 0) {
				lags.push(performance.now() - answered);
				polls.push(poll);
				break;
			}
			if (performance.now() - answered > 10_000) throw new Error(`${identity} not found within 10 s`);
		}
	}
	const ms = lags.sort((a, b) => a - b);
	return {
		p50_ms: +ms[Math.floor(ms.length / 2)].toFixed(2),
		p95_ms: +ms[Math.floor(ms.length * 0.95)].toFixed(2),
		most_polls: Math.max(...polls),
	};
}

function countBy(values) {
	const counts = {};
	for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
	return counts;
}

export async function benchShards() {
	const results = {};
	for (const [name, shards] of CONFIGS) results[name] = await measure(name, shards);
	const [two, one] = [results["two shards"], results["one shard"]];
	const ratio = (a, b) => +(a / b).toFixed(2);
	results.ratios = {
		whoami_throughput: ratio(two.whoami.requests_per_second, one.whoami.requests_per_second),
		scan_throughput: ratio(two.scan.requests_per_second, one.scan.requests_per_second),
		resolve_system_p50: ratio(two.resolve_system.p50_ms, one.resolve_system.p50_ms),
	};
	return results;
}

export function printShards(results) {
	console.log("\ntwo shards against one, in the same run (8 connections for 10 s each; resolve 100 calls)\n");
	console.log(
		"| configuration | accounts per database | /whoami req/s | scan req/s | resolve system p50 ms | p95 ms | queries | rows read |",
	);
	console.log("|---|---|---|---|---|---|---|---|");
	for (const name of ["two shards", "one shard"]) {
		const r = results[name];
		console.log(
			`| ${name} | ${JSON.stringify(r.accounts_per_shard)} | ${r.whoami.requests_per_second} | ${r.scan.requests_per_second} | ${r.resolve_system.p50_ms} | ${r.resolve_system.p95_ms} | ${r.resolve_system.queries} | ${r.resolve_system.rows_read} |`,
		);
	}
	console.log(`\nratios two/one: ${JSON.stringify(results.ratios)}`);
	console.log("\ndirectory lag, from a public identity's answer to the first resolve that finds it\n");
	console.log("| configuration | p50 ms | p95 ms | most resolves until found |");
	console.log("|---|---|---|---|");
	for (const name of ["two shards", "one shard"]) {
		const lag = results[name].directory_lag;
		console.log(`| ${name} | ${lag.p50_ms} | ${lag.p95_ms} | ${lag.most_polls} |`);
	}
}

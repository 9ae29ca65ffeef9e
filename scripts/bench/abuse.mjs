// `npm run bench:abuse`: the adversarial requests of the bounded-cost issue against a local
// `wrangler dev` (loopback only), each next to an ordinary scan: latency and D1 time (from
// Server-Timing) per case, and the /whoami latency of another account measured meanwhile.
// Every loop is bounded in count and in time. Prints a table and writes bench/abuse.json.
// `-- --only <text>` runs the cases whose name holds the text (and the ordinary scan).
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseCli } from "../cli.mjs";
import { startDevServer } from "../test/dev-server.mjs";
import { accountSeed, twinsSeed } from "./seed.mjs";
import { wranglerDone } from "../wrangler.mjs";

const RUNS = 5;
const CASE_SECONDS = 60;
const { values: args } = parseCli({
	usage: `
usage: npm run bench:abuse [-- --only TEXT]

The adversarial requests of the bounded-cost issue against a \`wrangler dev\` of its own, each
next to an ordinary scan, with another account's /whoami latency meanwhile; every loop bounded
(${RUNS} runs, ${CASE_SECONDS} s a case). Prints a table and writes bench/abuse.json.

  --only TEXT   only the cases whose name holds TEXT (and the ordinary scan)
  --port N      its server's port (default: BENCH_PORT, else 8811; the inspector takes N + 1000)
  -h, --help    this text
`,
	options: { only: { type: "string" }, port: { type: "string", default: process.env.BENCH_PORT ?? "8811" } },
});
const PORT = Number(args.port);
const STATE = ".wrangler/bench-abuse-state";
const chosen = (name) => !args.only || name.includes(args.only);

rmSync(STATE, { recursive: true, force: true });
mkdirSync("bench", { recursive: true });
mkdirSync(".wrangler", { recursive: true });

const repeat = (text, times) => `replace(hex(zeroblob(${times})), '00', '${text}')`;
// Ordinary twins; twins with a text the catastrophic patterns chew on; long strings for `in`;
// and the largest descriptions a twin may hold (32 KiB).
const plain = accountSeed("plain");
const long = accountSeed("long");
const large = accountSeed("large");
const bystander = accountSeed("bystander");
const templated = accountSeed("templated");
const seed = [
	plain.sql,
	long.sql,
	large.sql,
	bystander.sql,
	templated.sql,
	twinsSeed(
		plain.uuid,
		1000,
		`json_object('i', i, 'site', CASE i % 3 WHEN 0 THEN 'north' ELSE 'south' END, 's', ${repeat("a", 30)} || 'b', 'text', ${repeat("lorem ipsum dolor ", 100)} || '!')`,
	),
	twinsSeed(long.uuid, 1000, `json_object('x', ${repeat("ab", 8000)}, 'y', ${repeat("ab", 4000)} || '!')`),
	twinsSeed(large.uuid, 1000, `json_object('text', ${repeat("x", 32 * 1024 - 20)})`),
	// The subscription limit, reached.
	`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000)
INSERT INTO subscriptions (uuid, account, user, topic, callback_url, token_hash, status, validity_ts, message, attempts, created_ts, updated_ts)
SELECT lower(hex(randomblob(16))), '${plain.uuid}', 'u', 'abc', 'https://example.com/', lower(hex(randomblob(32))), 'pending', 9e9, 'm', 0, 1, 1 FROM n;`,
].join("\n");
const seedFile = fileURLToPath(new URL("../../.wrangler/bench-abuse-seed.sql", import.meta.url));
writeFileSync(seedFile, seed);

const q = encodeURIComponent;
// 40 substring tests in one rule, grouped by 8 to stay within the nesting depth of 32.
const group = Array.from({ length: 8 }, () => "TWIN.y in TWIN.x").join(" or ");
const longRule = Array.from({ length: 5 }, () => `(${group})`).join(" or ");
const literal = "ab".repeat(450);
const ORDINARY = "ordinary scan (count=1000, details, match site)";

const server = await startDevServer({ port: PORT, persistTo: STATE, inspectorPort: PORT + 1000 });
try {
	// DB_0: the seeded accounts have version-4 uuids (seed.mjs), which belong to the first shard.
	await wranglerDone(["d1", "execute", "DB_0", "--local", "--persist-to", STATE, "--file", seedFile, "--yes"], {
		stdio: ["ignore", "ignore", "inherit"],
	});

	async function send(method, path, { secret, body, address } = {}) {
		const headers = {
			...(secret ? { authorization: secret } : {}),
			...(address ? { "cf-connecting-ip": address } : {}),
		};
		const start = performance.now();
		const res = await fetch(server.url + path, { method, headers, body: body ? JSON.stringify(body) : undefined });
		const text = await res.text();
		const ms = performance.now() - start;
		const d1 = Number(/d1;dur=([\d.]+)/.exec(res.headers.get("server-timing") ?? "")?.[1] ?? 0);
		let json = null;
		try {
			json = JSON.parse(text);
		} catch {}
		return { status: res.status, ms, d1, bytes: text.length, json };
	}

	// The other account asks /whoami in a loop while a case runs.
	async function whileWatching(work) {
		let running = true;
		const watched = [];
		const watcher = (async () => {
			while (running) watched.push((await send("GET", "/whoami", { secret: bystander.secret })).ms);
		})();
		try {
			return { result: await work(), watched };
		} finally {
			running = false;
			await watcher;
		}
	}

	const median = (values) => {
		const sorted = [...values].sort((a, b) => a - b);
		return sorted.length ? sorted[Math.floor(sorted.length / 2)] : 0;
	};

	async function measure(name, request, runs = RUNS) {
		if (!chosen(name) && name !== ORDINARY) return undefined;
		const deadline = Date.now() + CASE_SECONDS * 1000;
		const { result: samples, watched } = await whileWatching(async () => {
			const samples = [];
			for (let i = 0; i < runs && Date.now() < deadline; i++) samples.push(await request(i));
			return samples;
		});
		const last = samples.at(-1);
		return {
			case: name,
			statuses: [...new Set(samples.map((s) => s.status))].join(","),
			p50_ms: +median(samples.map((s) => s.ms)).toFixed(1),
			max_ms: +Math.max(...samples.map((s) => s.ms)).toFixed(1),
			d1_ms: +median(samples.map((s) => s.d1)).toFixed(1),
			answer_kib: +(last.bytes / 1024).toFixed(0),
			twins: last.json?.twins?.length ?? "-",
			cursor: last.json && "cursor" in last.json ? (last.json.cursor ? "yes" : "null") : "-",
			whoami_p50_ms: +median(watched).toFixed(1),
			whoami_max_ms: +Math.max(0, ...watched).toFixed(1),
		};
	}

	const scan = (who, query) => () => send("GET", `/twins?${query}`, { secret: who.secret });
	const cases = [];
	cases.push(await measure(ORDINARY, scan(plain, `count=1000&details=true&match=${q("TWIN.site == 'north'")}`)));
	cases.push(
		await measure("regex ^(a+)+$ over 'a'x30+'b'", scan(plain, `count=1000&match=${q("TWIN.s =~ '^(a+)+$'")}`)),
	);
	cases.push(
		await measure(
			"regex ^(\\w+\\s?)*$ over 1.8 KB text",
			scan(plain, `count=1000&details=true&match=${q("TWIN.text =~ '^(\\\\w+\\\\s?)*$'")}`),
		),
	);
	cases.push(await measure("TWIN.y in TWIN.x, 8 KB in 16 KB", scan(long, `count=1000&match=${q("TWIN.y in TWIN.x")}`)));
	cases.push(
		await measure(`the same 40 times (${longRule.length}-char rule)`, scan(long, `count=1000&match=${q(longRule)}`)),
	);
	cases.push(
		await measure("900-char literal in TWIN.x (16 KB)", scan(long, `count=1000&match=${q(`'${literal}!' in TWIN.x`)}`)),
	);
	cases.push(
		await measure("TWIN.x (16 KB) in 900-char literal", scan(long, `count=1000&match=${q(`TWIN.x in '${literal}'`)}`)),
	);
	cases.push(await measure("count=1000&details=true over 32 KiB twins", scan(large, "count=1000&details=true")));
	cases.push(await measure("-1e999 literal", scan(plain, `match=${q("TWIN.i > -1e999")}`)));
	cases.push(await measure("backreference pattern", scan(plain, `match=${q("TWIN.s =~ '(a)\\\\1'")}`)));
	cases.push(
		await measure(
			"1100 cursors from one user (count=1 scans)",
			(i) => scan(plain, `count=1&match=${q(`TWIN.i != ${i}`)}`)(),
			1100,
		),
	);
	cases.push(
		await measure(
			"wrong PIN guesses from one address",
			() => send("POST", `/secrets/${plain.uuid}/AAAAAAAAAA`, { address: "198.51.100.7" }),
			60,
		),
	);
	cases.push(
		await measure("webhook_subscribe past MAX_SUBSCRIPTIONS", () =>
			send("POST", "/notifications/webhooks", {
				secret: plain.secret,
				body: { topic: "abc", callback_url: "https://example.com/hook" },
			}),
		),
	);

	// Indexes tables whose templates read a 60 KB entry: ten tables of 32 properties, each
	// template the entry eight times in a text, against ten tables of one plain property. A
	// ledger write evaluates every table; a rebuild walks the ledgers in the account's alarm.
	const TEMPLATES = "ledger write, 10 tables x 32 templates reading a 60 KB entry 8 times";
	const PLAIN_TABLES = "ledger write, 10 tables of one plain template, 60 KB entry";
	const BUILD = "rebuild of 10 such tables over 34 ledgers of 60 KB (alarm steps)";
	if ([TEMPLATES, PLAIN_TABLES, BUILD].some(chosen)) {
		const names = Array.from({ length: 32 }, (_, i) => `p${i}`);
		const eight = `x${"{LEDGER[o]}".repeat(8)}`;
		const table = (heavy, rule = "true") => ({
			rule,
			properties: { names: heavy ? names : ["n"], types: heavy ? names.map(() => "string") : ["integer"] },
			templates: { properties: heavy ? Object.fromEntries(names.map((name) => [name, eight])) : { n: "{LEDGER[n]}" } },
		});
		const tables = (heavy, prefix) =>
			Object.fromEntries(Array.from({ length: 10 }, (_, i) => [`${prefix}${i}`, table(heavy)]));
		const entry = (n) => ({
			o: { value: Object.fromEntries(Array.from({ length: 4800 }, (_, i) => [`k${i}`, i + n])) },
			n: { value: n },
		});
		const made = await send("POST", "/account/services/indexes", {
			secret: templated.secret,
			body: { indexes: tables(true, "heavy") },
		});
		if (made.status !== 201) throw new Error(`create_indexes_table answered ${made.status}`);
		const twin = (await send("POST", "/twins", { secret: templated.secret, body: {} })).json.uuid;
		const write = (i) =>
			send("PATCH", `/twins/${twin}/ledgers/personal`, { secret: templated.secret, body: { entries: entry(i) } });
		await send("POST", `/twins/${twin}/ledgers/personal`, { secret: templated.secret, body: { entries: entry(0) } });
		cases.push(await measure(TEMPLATES, (i) => write(i + 1)));
		// The same writes with ten plain tables instead.
		for (let i = 0; i < 10; i++)
			await send("DELETE", `/account/services/indexes/heavy${i}`, { secret: templated.secret });
		await send("POST", "/account/services/indexes", {
			secret: templated.secret,
			body: { indexes: tables(false, "plain") },
		});
		cases.push(await measure(PLAIN_TABLES, (i) => write(i + 100)));
		for (let i = 0; i < 10; i++)
			await send("DELETE", `/account/services/indexes/plain${i}`, { secret: templated.secret });
		// 33 more ledgers, then ten heavy tables built over the 34 by the alarm: the case is the
		// time until every table is ready, polled every 100 ms, with the bystander meanwhile.
		for (let i = 0; i < 33; i++) {
			const other = (await send("POST", "/twins", { secret: templated.secret, body: {} })).json.uuid;
			await send("POST", `/twins/${other}/ledgers/personal`, { secret: templated.secret, body: { entries: entry(i) } });
		}
		cases.push(
			await measure(
				BUILD,
				async (i) => {
					const start = performance.now();
					await send("POST", "/account/services/indexes", {
						secret: templated.secret,
						body: { indexes: tables(true, `build${i}_`) },
					});
					for (;;) {
						const listed = await send("GET", "/account/services/indexes", { secret: templated.secret });
						const mine = Object.entries(listed.json.indexes).filter(([name]) => name.startsWith(`build${i}_`));
						if (mine.every(([, record]) => record.status === "ready")) break;
						if (performance.now() - start > CASE_SECONDS * 1000) throw new Error("the build did not finish");
						await new Promise((resolve) => setTimeout(resolve, 100));
					}
					for (let t = 0; t < 10; t++)
						await send("DELETE", `/account/services/indexes/build${i}_${t}`, { secret: templated.secret });
					return { status: 200, ms: performance.now() - start, d1: 0, bytes: 0, json: null };
				},
				1,
			),
		);
	}

	const ran = cases.filter((c) => c !== undefined);
	cases.length = 0;
	cases.push(...ran);
	const baseline = cases[0].p50_ms;
	for (const c of cases) c.x_ordinary = +(c.p50_ms / baseline).toFixed(2);
	writeFileSync("bench/abuse.json", `${JSON.stringify({ runs_per_case: RUNS, cases }, null, 2)}\n`);

	console.log(`\nadversarial requests (p50 of ${RUNS} runs unless noted) and another account's /whoami meanwhile\n`);
	console.log(
		"| case | status | p50 ms | max ms | D1 ms | answer KiB | twins | cursor | x ordinary | /whoami p50 ms | /whoami max ms |",
	);
	console.log("|---|---|---|---|---|---|---|---|---|---|---|");
	for (const c of cases) {
		console.log(
			`| ${c.case} | ${c.statuses} | ${c.p50_ms} | ${c.max_ms} | ${c.d1_ms} | ${c.answer_kib} | ${c.twins} | ${c.cursor} | ${c.x_ordinary} | ${c.whoami_p50_ms} | ${c.whoami_max_ms} |`,
		);
	}
	console.log("\nwritten to bench/abuse.json");
} finally {
	server.stop();
}

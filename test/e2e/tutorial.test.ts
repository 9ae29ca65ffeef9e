import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readText, tutorialBlocks } from "../../scripts/test/repository.mjs";
import { portFrom, startDevServer } from "../../scripts/test/dev-server.mjs";

// docs/tutorial.md promises that its commands work as printed. This runs every ```sh tutorial
// block of the page, in order, with bash, against a wrangler dev of its own (its own port and
// state folder, CALLBACK_POLICY "any" as `npm start` sets it; it needs bash, curl and jq, as the
// page says), and checks each ends with status 0
// and a few of their outputs. A block runs in a bash of its own: the shell variables it sets are
// kept in a file the next block sources, as one terminal would keep them. `curl` fails on an
// answer of 400 or more (--fail-with-body), except in a command that prints the status itself
// (`-w '... %{http_code}'`), where the refusal is the point and the check reads the status.
// TUTORIAL_PRINT=1 prints what each block printed, to bring the page's sample outputs up to date.
// E2E_TUTORIAL_PORT, else a free port.
const PORT = await portFrom("E2E_TUTORIAL_PORT");
const ADMIN_TOKEN = "an-admin-token-for-the-tutorial-test-only";
const FILE = "docs/tutorial.md";
const blocks = tutorialBlocks(readText(FILE));

const RUNNER = `
set -a
source "$TUTORIAL_STATE"
block="$TUTORIAL_BLOCK"
# job control, as in a terminal: a background job gets a process group of its own
set -m
curl() { case "$*" in *'%{http_code}'*) command curl "$@" ;; *) command curl --fail-with-body "$@" ;; esac; }
set -eo pipefail
source "$block"
set +e +o pipefail
export -p | grep -v '^declare -x TUTORIAL_BLOCK=' > "$TUTORIAL_STATE"
`;

// The shell variables a block left, as `export -p` wrote them.
function variables(state: string): Record<string, string> {
	const found: Record<string, string> = {};
	for (const [, name, value] of readFileSync(state, "utf8").matchAll(/^declare -x (\w+)="(.*)"$/gm))
		found[name] = value;
	return found;
}

// What some blocks must print, found by a command the block holds.
type Check = { holds: string; expect: (output: string, vars: Record<string, string>) => void };
const CHECKS: Check[] = [
	{
		holds: "/secrets/$ACCOUNT/$PIN",
		expect: (out, v) => expect(JSON.parse(out)).toEqual({ account: v.ACCOUNT, user: v.DAN, role: v.DRIVER_ROLE }),
	},
	{ holds: "/resolve/VIN%23WF0XXXTTGXKA10001", expect: (out, v) => expect(out).toContain(`{"twins":["${v.VAN1}"]`) },
	{
		holds: "$B/twins/$VAN3 -H",
		expect: (out) => {
			expect(out).toContain('["KX-101","KX-102"]');
			expect(out).toMatch(/"subcode":404102.* 404$/m);
		},
	},
	{
		holds: 'low_fuel": {',
		expect: (out) => expect(JSON.parse(out)).toEqual({ status: "ready", stats: { rows: 0, table_size: 0 } }),
	},
	{ holds: "webhook-listener", expect: (out) => expect(out).toMatch(/^confirmed: 200/m) },
	{
		holds: "match=ROW.fuel < 15",
		expect: (out, v) => {
			const rows = out
				.trim()
				.split("\n")
				.map((line) => JSON.parse(line) as { twin: string; properties: { fuel: number } });
			expect(rows.filter((row) => row.twin !== v.VAN1).map((row) => row.twin)).toEqual([v.VAN3]);
			expect(rows.filter((row) => row.twin === v.VAN1).map((row) => row.properties)).toEqual([
				{ fuel: 14, mileage: 20312 },
				{ fuel: 14, mileage: 20312 },
			]);
		},
	},
	{
		holds: "grep '^data:' \"$DIR/stream.txt\"",
		expect: (out, v) => {
			expect(out.match(/✓ hash {2}✓ signature {2}Notification/g)?.length).toBeGreaterThanOrEqual(5);
			expect(out).not.toContain("✗");
			const sent = out
				.split("\n")
				.filter((line) => line.startsWith("{"))
				.map((line) => JSON.parse(line) as { trigger: string; twin: string });
			expect(sent.map((message) => [message.trigger, message.twin])).toEqual([
				["ledger.entry.added", v.VAN1],
				["ledger.entry.added", v.VAN2],
				["ledger.entry.updated", v.VAN1],
			]);
		},
	},
	{
		holds: '"$DIR/downloaded.pdf" | cut',
		expect: (out) => {
			const sums = out.trim().split("\n").slice(-2);
			expect(sums[0]).toMatch(/^[0-9a-f]{64}$/);
			expect(sums[1]).toBe(sums[0]);
		},
	},
	{
		holds: "Access-Control-Request-Method",
		expect: (out) =>
			expect(out).toMatch(/^HTTP\/1.1 204[\s\S]*access-control-allow-origin: \*[\s\S]*\["KX-101","KX-102"\]/im),
	},
	{
		holds: "access_token=$STREAM_TOKEN",
		expect: (out) => expect(out).toMatch(/^id: \d+\tevent: ledger.entry.updated$/m),
	},
	{
		holds: "Idempotency-Key",
		expect: (out) =>
			expect(out).toMatch(
				/^HTTP\/1.1 201 Created\nHTTP\/1.1 201 Created\nidempotent-replayed: true\n\{"subcode":409101.* 409$/m,
			),
	},
	{ holds: "/stickers/yellow", expect: (out) => expect(out).toMatch(/^event: sticker.put\nevent: sticker.removed$/m) },
	{ holds: "kill -INT -- -$LISTENER", expect: (out) => expect(out).toMatch(/^unsubscribed: 200$/m) },
	{ holds: "$B/usage/$DAN", expect: (out) => expect(out).toMatch(/"requests":\d+/) },
	{ holds: "$B/log", expect: (out) => expect(out).toMatch(/Sticker expired: twin=\[[0-9a-f-]{36}\], color=\[blue\]/) },
];

describe("docs/tutorial.md, every block in order, against wrangler dev", () => {
	let server: { url: string; stop: () => void } | undefined;
	let folder: string;
	let state: string;
	// The process groups of the blocks' shells and of the page's background jobs (the listener,
	// the stream): ended after the last block, in case the page's own clean-up did not run.
	const groups: number[] = [];
	const checked = new Set<Check>();

	beforeAll(async () => {
		folder = mkdtempSync(join(tmpdir(), "twin-registry-tutorial-"));
		state = join(folder, "variables.sh");
		writeFileSync(state, "");
		server = await startDevServer({
			port: PORT,
			persistTo: join(folder, "state"),
			vars: { ADMIN_TOKEN, CALLBACK_POLICY: "any" },
		});
	}, 120_000);

	afterAll(() => {
		const { LISTENER, STREAM } = variables(state);
		for (const job of [LISTENER, STREAM]) if (/^\d+$/.test(job ?? "")) groups.push(Number(job));
		for (const group of groups) {
			try {
				process.kill(-group, "SIGTERM");
			} catch {}
		}
		server?.stop();
		const dir = variables(state).DIR;
		if (dir?.startsWith(tmpdir())) rmSync(dir, { recursive: true, force: true });
		rmSync(folder, { recursive: true, force: true });
	});

	function run(block: string, index: number): Promise<{ status: number | null; output: string }> {
		const file = join(folder, `block-${index + 1}.sh`);
		writeFileSync(file, block);
		return new Promise((resolve) => {
			const child = spawn("bash", ["-c", RUNNER], {
				detached: true,
				env: { ...process.env, B: server?.url, ADMIN_TOKEN, TUTORIAL_STATE: state, TUTORIAL_BLOCK: file },
				stdio: ["ignore", "pipe", "pipe"],
			});
			if (child.pid) groups.push(child.pid);
			let output = "";
			child.stdout.on("data", (chunk) => (output += chunk));
			child.stderr.on("data", (chunk) => (output += chunk));
			child.on("close", (status) => resolve({ status, output }));
		});
	}

	it("finds the runnable blocks", () => {
		expect(blocks.length).toBeGreaterThan(10);
	});

	blocks.forEach((block, index) => {
		const title = block.split("\n").find((line) => line.trim() && !line.startsWith("#")) ?? "";
		it(`block ${index + 1}: ${title.slice(0, 70)}`, async () => {
			const { status, output } = await run(block, index);
			if (process.env.TUTORIAL_PRINT) console.log(`--- block ${index + 1}\n${output}`);
			expect(status, `block ${index + 1} of ${FILE} printed:\n${output}`).toBe(0);
			for (const check of CHECKS.filter((check) => block.includes(check.holds))) {
				check.expect(output, variables(state));
				checked.add(check);
			}
		}, 90_000);
	});

	it("met every check in some block", () => {
		expect(CHECKS.filter((check) => !checked.has(check)).map((check) => check.holds)).toEqual([]);
	});
});

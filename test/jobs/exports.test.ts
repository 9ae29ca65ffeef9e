import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, inject, it } from "vitest";
import { type Account, bootstrap, createUser, issueSecret, userWithRules } from "../support/accounts";
import { call, expectError } from "../support/requests";
import { dbOf } from "../support/shards";
import { newTwin, seedTwins } from "../support/twins";
import { addEntries, seedLedgers } from "../support/ledgers";
import { attach, idPath } from "../identities/helpers";
import { download } from "../docs/helpers";
import { createIndexes, indexBuilt, indexDefinition, indexRows } from "../indexes/helpers";
import { holdJobs, runJob, stepJob } from "./helpers";

// Exports read through the Worker, their files read back by DuckDB (test/jobs/duckdb-reader.ts,
// on Node): every file holds exactly what its creator may see through the API, nothing hidden
// from it and nothing of another account.

type FileRows = { columns: string[]; types: string[]; rows: any[] };

const KEYS: Record<string, string[]> = {
	twins: ["uuid", "owner", "status", "description", "creation_certificate", "termination_certificate", "updated_ts"],
	identities: ["twin", "identity", "validity_ts", "visibility", "created_ts", "updated_ts"],
	ledgers: [
		"twin",
		"ledger",
		"entry",
		"value",
		"visibility",
		"history",
		"publish",
		"entry_created_ts",
		"entry_updated_ts",
		"value_changed_ts",
	],
	indexes: ["table", "twin", "properties", "updated_ts"],
};

// What DuckDB reads from a file's bytes.
async function duckdbRows(bytes: Uint8Array): Promise<FileRows> {
	const res = await fetch(`http://127.0.0.1:${inject("duckdbPort")}/rows`, { method: "POST", body: bytes });
	const answer = (await res.json()) as FileRows & { error?: string };
	expect(res.status, answer.error).toBe(200);
	return answer;
}

// Each file of a completed export as DuckDB reads it, checked against its record: its lines, its
// bytes, and the keys of its lines in their order.
async function filesOf(done: any): Promise<Record<string, any[]>> {
	expect(done.status).toBe("completed");
	const files: Record<string, any[]> = {};
	for (const [name, file] of Object.entries<any>(done.files)) {
		const got = await download(file.url);
		expect(got.status).toBe(200);
		expect(got.bytes.length).toBe(file.bytes);
		const read = await duckdbRows(got.bytes);
		expect(read.rows.length).toBe(file.lines);
		if (read.rows.length) expect(read.columns).toEqual(KEYS[name]);
		files[name] = read.rows;
	}
	return files;
}

async function createExport(secret: string, body: Record<string, unknown> = {}) {
	const res = await call("POST", "/exports", { secret, body });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body as { export: string; status: string };
}

// An export made and run to its end: its record.
async function exported(secret: string, body: Record<string, unknown> = {}) {
	const made = await createExport(secret, body);
	expect(made.status).toBe("new");
	return runJob(secret, `/exports/${made.export}`);
}

// What the API shows the caller, in the shape of the files' lines.
async function twinLines(secret: string, twins: string[]) {
	const lines = [];
	for (const twin of [...twins].sort()) {
		const res = await call("GET", `/twins/${twin}`, { secret });
		expect(res.status).toBe(200);
		const { uuid, owner, status, description, creation_certificate, termination_certificate, updated_ts } = res.body;
		lines.push({ uuid, owner, status, description, creation_certificate, termination_certificate, updated_ts });
	}
	return lines;
}

async function identityLines(secret: string, twins: string[]) {
	const lines = [];
	for (const twin of [...twins].sort()) {
		const listed = await call("GET", `${idPath(twin)}?show_expired=true`, { secret });
		expect(listed.status).toBe(200);
		for (const identity of Object.keys(listed.body.identities).sort()) {
			const one = await call("GET", idPath(twin, identity), { secret });
			expect(one.status).toBe(200);
			const { validity_ts, visibility, updated_ts, creation_certificate } = one.body;
			lines.push({ twin, identity, validity_ts, visibility, created_ts: creation_certificate.created_ts, updated_ts });
		}
	}
	return lines;
}

async function ledgerLines(caller: Account, twins: string[]) {
	const lines = [];
	for (const twin of [...twins].sort()) {
		const res = await call("GET", `/twins/${twin}/ledgers/personal`, { secret: caller.secret });
		expect(res.status).toBe(200);
		for (const entry of Object.keys(res.body.entries).sort()) {
			const e = res.body.entries[entry];
			lines.push({
				twin,
				ledger: caller.account,
				entry,
				value: e.value,
				visibility: e.visibility,
				history: e.history ?? null,
				publish: e.publish ?? null,
				entry_created_ts: e.entry_created_ts,
				entry_updated_ts: e.entry_updated_ts,
				value_changed_ts: e.value_changed_ts,
			});
		}
	}
	return lines;
}

const LONG_AGO = 1_000_000;

// Account A with three twins (one shared, one terminated), identities and entries on them, and
// account B, which writes its own identity and entry on A's shared twin while A writes on B's
// shared twin: none of that may reach an export of A's twins.
async function world() {
	const a = await bootstrap();
	const b = await bootstrap();
	const shared = await newTwin(a.secret, { shared: true, site: "north" });
	const plain = await newTwin(a.secret, { site: "south" });
	const ended = await newTwin(a.secret, { site: "gone" });
	expect((await call("DELETE", `/twins/${ended}`, { secret: a.secret })).status).toBe(200);
	await attach(a.secret, shared, {
		"RFID#1": { visibility: "true" },
		"RFID#old": { validity_ts: LONG_AGO },
		"SN#2": {},
	});
	await attach(a.secret, plain, { "RFID#9": {} });
	await addEntries(a.secret, shared, {
		note: { value: { text: "hello", n: [1, 2] }, visibility: "true" },
		secret: { value: 42 },
	});
	await addEntries(a.secret, plain, { status: { value: { state: "running", rpm: 1450 }, history: "30D" } });
	const theirs = await newTwin(b.secret, { shared: true });
	const bReader = await userWithRules(b, { twin: "TWIN.shared == true" });
	await addEntries(bReader.secret, shared, { foreign: { value: "of b", visibility: "true" } });
	await attach(bReader.secret, shared, { "RFID#b": { visibility: "true" } });
	const aReader = await userWithRules(a, { twin: "TWIN.shared == true" });
	await addEntries(aReader.secret, theirs, { mine: { value: "on b's twin" } });
	await attach(aReader.secret, theirs, { "RFID#onb": {} });
	return { a, b, shared, plain, ended, theirs };
}

// Nothing of the other account, nor of A's writes on the other account's twin, in any line.
function expectNothingOf(files: Record<string, any[]>, w: Awaited<ReturnType<typeof world>>) {
	const text = JSON.stringify(files);
	for (const absent of [w.b.account, w.theirs, "RFID#b", "RFID#onb", "of b", "on b's twin"])
		expect(text).not.toContain(absent);
}

describe("an export", () => {
	it("by the administrator holds the account's twins, identities (expired too) and ledgers as the API shows them", async () => {
		const w = await world();
		const done = await exported(w.a.secret, { description: { purpose: "backup" } });
		expect(done.contents).toEqual(["twins", "identities", "ledgers"]);
		expect(done.match).toBeNull();
		expect(done.description).toEqual({ purpose: "backup" });
		expect(done.progress).toEqual({ twins: 3, scanned: 3, exported: 3 });
		expect(done.expires_ts).toBeGreaterThan(done.updated_ts);
		expect(Object.keys(done.files)).toEqual(["twins", "identities", "ledgers"]);
		for (const file of Object.values<any>(done.files)) expect(file.validity_ts).toBeLessThanOrEqual(done.expires_ts);
		const files = await filesOf(done);
		const twins = [w.shared, w.plain, w.ended];
		expect(files.twins).toEqual(await twinLines(w.a.secret, twins));
		expect(files.twins!.find((t) => t.uuid === w.ended).status).toBe("terminated");
		expect(files.identities).toEqual(await identityLines(w.a.secret, twins));
		expect(files.identities!.map((i) => i.identity).sort()).toEqual(["RFID#1", "RFID#9", "RFID#old", "SN#2"]);
		expect(files.ledgers).toEqual(await ledgerLines(w.a, twins));
		expect(files.ledgers!.map((e) => e.entry).sort()).toEqual(["note", "secret", "status"]);
		expect(files.ledgers!.find((e) => e.entry === "note").value).toEqual({ text: "hello", n: [1, 2] });
		expectNothingOf(files, w);
	});

	it("by a confined creator holds only what its twin, identity and entry rules show", async () => {
		const w = await world();
		const confined = await userWithRules(w.a, {
			twin: "TWIN.shared == true",
			identity: "identity =~ '^RFID'",
			entry: "entry_name != 'secret'",
		});
		const done = await exported(confined.secret);
		expect(done.progress).toEqual({ twins: 3, scanned: 3, exported: 1 });
		const files = await filesOf(done);
		expect(files.twins).toEqual(await twinLines(confined.secret, [w.shared]));
		expect(files.identities).toEqual(await identityLines(confined.secret, [w.shared]));
		expect(files.identities!.map((i) => i.identity)).toEqual(["RFID#1", "RFID#old"]);
		expect(files.ledgers).toEqual(await ledgerLines(confined, [w.shared]));
		expect(files.ledgers!.map((e) => e.entry)).toEqual(["note"]);
		expectNothingOf(files, w);
		// Index rows come from whole ledgers: a role with an entry rule may not export them.
		const refused = await call("POST", "/exports", { secret: confined.secret, body: { contents: ["indexes"] } });
		expectError(refused, 403, 403102);
	});

	it("holds only the twins `match` selects, and only the contents asked for", async () => {
		const w = await world();
		const done = await exported(w.a.secret, { contents: ["twins", "ledgers", "twins"], match: "TWIN.site == 'north'" });
		expect(done.contents).toEqual(["twins", "ledgers"]);
		expect(done.match).toBe("TWIN.site == 'north'");
		expect(done.progress).toEqual({ twins: 3, scanned: 3, exported: 1 });
		expect(Object.keys(done.files)).toEqual(["twins", "ledgers"]);
		const files = await filesOf(done);
		expect(files.twins).toEqual(await twinLines(w.a.secret, [w.shared]));
		expect(files.ledgers).toEqual(await ledgerLines(w.a, [w.shared]));
	});

	it("writes an empty file as gzip with no line", async () => {
		const a = await bootstrap();
		await newTwin(a.secret);
		const done = await exported(a.secret, { contents: ["identities"] });
		expect(done.files.identities.lines).toBe(0);
		const files = await filesOf(done);
		expect(files.identities).toEqual([]);
	});

	it("holds every current row of the account's Indexes tables, by table and twin; a twin rule keeps those it sees", async () => {
		const w = await world();
		await createIndexes(w.a.secret, {
			pumps: indexDefinition("LEDGER.status != null", {
				state: ["text", "{LEDGER[status][state]}"],
				rpm: ["integer", "{LEDGER[status][rpm]}"],
			}),
			notes: indexDefinition("LEDGER.note != null", { text: ["string", "{LEDGER[note][text]}"] }),
		});
		await addEntries(w.a.secret, w.shared, { status: { value: { state: "failure", rpm: "1500" } } });
		await indexBuilt(w.a.secret, "pumps");
		await indexBuilt(w.a.secret, "notes");
		const expected = async (secret: string) => {
			const lines = [];
			for (const table of ["notes", "pumps"])
				for (const row of (await indexRows(secret, table)).rows)
					lines.push({ table, twin: row.twin, properties: row.properties, updated_ts: row.updated_ts });
			return lines;
		};
		const done = await exported(w.a.secret, { contents: ["indexes"] });
		expect(done.progress).toEqual({ twins: 3, scanned: 0, exported: 0 });
		const files = await filesOf(done);
		expect(files.indexes).toEqual(await expected(w.a.secret));
		expect(files.indexes!.map((row) => [row.table, row.twin])).toEqual([
			["notes", w.shared],
			...[w.shared, w.plain].sort().map((twin) => ["pumps", twin]),
		]);
		const reader = await userWithRules(w.a, { twin: "TWIN.shared == true" });
		const confined = await filesOf(await exported(reader.secret, { contents: ["twins", "indexes"] }));
		expect(confined.indexes).toEqual(await expected(reader.secret));
		expect(confined.indexes!.map((row) => row.twin)).toEqual([w.shared, w.shared]);
		expect(confined.twins!.map((twin) => twin.uuid)).toEqual([w.shared]);
	});

	it("cancelled keeps no file", async () => {
		const a = await bootstrap();
		await newTwin(a.secret);
		await holdJobs(a.account);
		const made = await createExport(a.secret);
		const cancel = await call("PATCH", `/exports/${made.export}`, { secret: a.secret, body: { status: "cancel" } });
		expect(cancel.status).toBe(200);
		expect(cancel.body.status).toBe("cancel");
		const done = await runJob(a.secret, `/exports/${made.export}`);
		expect(done.status).toBe("cancelled");
		expect(done.files).toBeUndefined();
		expect(done.expires_ts).toBeGreaterThan(done.updated_ts);
		expect((await env.DOCS.list({ prefix: `jobs/${made.export}/` })).objects).toEqual([]);
	});

	it("stops, cancelled, when its creator's secret is deleted", async () => {
		const a = await bootstrap();
		await newTwin(a.secret);
		const user = await createUser(a);
		const secret = await issueSecret(a, user);
		// Held, so that it cannot complete on its own before the secret goes.
		await holdJobs(a.account);
		const made = await createExport(secret);
		await stepJob(made.export);
		expect((await call("DELETE", `/users/${user}/secrets`, { secret: a.secret })).status).toBe(200);
		const done = await runJob(a.secret, `/exports/${made.export}`);
		expect(done.status).toBe("cancelled");
		expect(done.stopped.subcode).toBe(401102);
		expect(done.files).toBeUndefined();
		expect((await env.DOCS.list({ prefix: `jobs/${made.export}/` })).objects).toEqual([]);
	});
});

// Twins written straight into D1, counted in the account's row as create_twin would: `big` of
// them with about 16 KiB of incompressible description each, so that the twins file passes a
// multipart part, and `small` plain ones, so that a step meets its 200 twins too.
async function manyTwins(a: Account, big: number, small: number) {
	const noise = () => btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(12 * 1024))));
	const uuids = [
		...(await seedTwins(
			a.account,
			Array.from({ length: big }, (_, i) => ({ i, noise: noise() })),
		)),
		...(await seedTwins(
			a.account,
			Array.from({ length: small }, (_, i) => ({ i })),
		)),
	];
	await dbOf(a.account)
		.prepare("UPDATE accounts SET twins = twins + ? WHERE uuid = ?")
		.bind(uuids.length, a.account)
		.run();
	await seedLedgers(
		a.account,
		uuids.slice(0, 300).map((twin, i) => ({ twin, entries: { n: i, label: `twin ${i}` } })),
	);
	return uuids;
}

// The export's own state, as its object keeps it.
async function jobState(job: string): Promise<any> {
	return runInDurableObject(env.BATCHES.getByName(job), async (_instance: unknown, state: DurableObjectState) =>
		JSON.parse(state.storage.sql.exec<{ state: string }>("SELECT state FROM job").one().state),
	);
}

describe("a large export", () => {
	it("walks the twins over many steps, each once, with its progress, into a multipart file served by range", async () => {
		const a = await bootstrap();
		const uuids = await manyTwins(a, 450, 350);
		const made = await createExport(a.secret);
		const path = `/exports/${made.export}`;
		const seen: any[] = [];
		for (let step = 0; step < 100; step++) {
			const res = await call("GET", path, { secret: a.secret });
			if (res.body.status === "completed") break;
			seen.push(res.body.progress);
			await stepJob(made.export);
		}
		const done = await runJob(a.secret, path, ["completed"]);
		expect(done.progress).toEqual({ twins: 800, scanned: 800, exported: 800 });
		// The walk took several steps, and its counts never went back.
		const walking = seen.filter((p) => p.scanned > 0 && p.scanned < 800);
		expect(walking.length).toBeGreaterThanOrEqual(3);
		// A step examines at most 200 twins.
		for (let i = 1; i < seen.length; i++) {
			expect(seen[i].scanned - seen[i - 1].scanned).toBeLessThanOrEqual(200);
			expect(seen[i].scanned).toBeGreaterThanOrEqual(seen[i - 1].scanned);
			expect(seen[i].exported).toBeGreaterThanOrEqual(seen[i - 1].exported);
		}
		const files = await filesOf(done);
		expect(files.twins!.map((twin) => twin.uuid)).toEqual([...uuids].sort());
		expect(files.ledgers!.length).toBe(600);
		expect(files.identities).toEqual([]);
		// More than one part: the twins file is a multipart object (its ETag counts its parts).
		const head = await env.DOCS.head(`jobs/${made.export}/twins`);
		expect(head!.size).toBeGreaterThan(5 * 1024 * 1024);
		expect(head!.etag).toMatch(/-\d+$/);
		// The URL serves the gzip bytes as they are.
		const url = done.files.twins.url;
		const whole = await download(url);
		expect(whole.headers.get("content-type")).toBe("application/gzip");
		expect(whole.headers.get("content-encoding")).toBeNull();
		expect(whole.headers.get("content-length")).toBe(String(done.files.twins.bytes));
		const part = await download(url, { range: "bytes=0-99" });
		expect(part.status).toBe(206);
		expect(part.headers.get("content-range")).toBe(`bytes 0-99/${done.files.twins.bytes}`);
		expect(part.bytes).toEqual(whole.bytes.slice(0, 100));
		expect([...part.bytes.slice(0, 2)]).toEqual([0x1f, 0x8b]);
	});

	it("cancelled mid-way aborts its upload and keeps nothing", async () => {
		const a = await bootstrap();
		await manyTwins(a, 450, 0);
		await holdJobs(a.account);
		const made = await createExport(a.secret, { contents: ["twins"] });
		let upload: string | null = null;
		for (let step = 0; step < 20 && upload === null; step++) {
			await stepJob(made.export);
			upload = (await jobState(made.export)).exporting?.files.twins.uploadId ?? null;
		}
		expect(upload).not.toBeNull();
		const cancel = await call("PATCH", `/exports/${made.export}`, { secret: a.secret, body: { status: "cancel" } });
		expect(cancel.body.status).toBe("cancel");
		const done = await runJob(a.secret, `/exports/${made.export}`);
		expect(done.status).toBe("cancelled");
		expect(done.files).toBeUndefined();
		expect((await env.DOCS.list({ prefix: `jobs/${made.export}/` })).objects).toEqual([]);
		const aborted = env.DOCS.resumeMultipartUpload(`jobs/${made.export}/twins`, upload!);
		await expect(aborted.uploadPart(99, "x")).rejects.toThrow();
		// Nothing is left of it in the object's storage either.
		await runInDurableObject(env.BATCHES.getByName(made.export), async (_i: unknown, state: DurableObjectState) => {
			expect(state.storage.sql.exec("SELECT count(*) AS n FROM pending").one().n).toBe(0);
		});
	});
});

// Batches and exports in tests: an input file uploaded, a job made, its object's steps run one
// at a time (its alarm, fired as at its time), and its files read.
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { call } from "../support/requests";
import { download, uploaded } from "../docs/helpers";

const encoder = new TextEncoder();

export const ndjson = (lines: unknown[]) =>
	lines.map((line) => `${typeof line === "string" ? line : JSON.stringify(line)}\n`).join("");

// An upload of the caller's holding `text`.
export async function uploadedText(secret: string, text: string) {
	return uploaded(secret, encoder.encode(text));
}

// A file batch of `operation` over `lines`, made by `secret`.
export async function fileBatch(
	secret: string,
	operation: string,
	lines: unknown[],
	extra: Record<string, unknown> = {},
) {
	const upload = await uploadedText(secret, ndjson(lines));
	const res = await call("POST", "/batches", { secret, body: { operation, handler: upload.handler, ...extra } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return { ...res.body, upload } as { batch: string; status: string; hash: string; upload: typeof upload };
}

const stub = (job: string) => env.BATCHES.getByName(job);

// One step of the job, as its alarm runs it when due: answers whether an alarm was set.
export async function stepJob(job: string): Promise<boolean> {
	await runInDurableObject(stub(job), async (_instance: unknown, state: DurableObjectState) => {
		const alarm = await state.storage.getAlarm();
		if (alarm !== null) state.storage.sql.exec("UPDATE timers SET due_ms = ? WHERE due_ms <= ?", Date.now(), alarm);
	});
	return runDurableObjectAlarm(stub(job));
}

const TERMINAL = ["hash_mismatch", "validation_failed", "completed", "cancelled"];

// The job's steps until its status is one of `statuses` (an end by default); answers its record.
export async function runJob(
	secret: string,
	path: string,
	statuses: string[] = TERMINAL,
	maxSteps = 500,
): Promise<any> {
	const job = path.split("/").pop()!;
	for (let step = 0; step < maxSteps; step++) {
		const res = await call("GET", path, { secret });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		if (statuses.includes(res.body.status)) return res.body;
		await stepJob(job);
	}
	throw new Error(`${path} did not reach ${statuses.join(" or ")} in ${maxSteps} steps`);
}

// The lines of a results file, parsed.
export async function resultsOf(url: string): Promise<any[]> {
	const got = await download(url);
	expect(got.status).toBe(200);
	const text = new TextDecoder().decode(got.bytes);
	return text === ""
		? []
		: text
				.trimEnd()
				.split("\n")
				.map((line) => JSON.parse(line));
}

// How many twins the account owns in D1.
export async function twinCount(db: D1Database, account: string): Promise<number> {
	const row = await db.prepare("SELECT count(*) AS n FROM twins WHERE owner = ?").bind(account).first<{ n: number }>();
	return row!.n;
}

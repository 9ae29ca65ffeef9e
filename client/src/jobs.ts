// Batches and exports, the service's jobs: what createBatch takes, the follow loop that reads a
// job until it ends, and a batch's results read line by line. A job runs in the background;
// HTTP gives nothing to wait on, so following one is reading its record again every interval.
import { abortableSleep } from "./retry.js";
import type { components, operations } from "./schema.js";

export type Batch = components["schemas"]["Batch"];
export type Export = components["schemas"]["Export"];

type CreateBatchBody = operations["create_batch"]["requestBody"]["content"]["application/json"];
type JobDescription = NonNullable<CreateBatchBody["description"]>;

// One call of the batch's operation: its path parameters by name (twin, ledger, identity,
// doc_name, color), its query and its body. A line of a file batch, or the template of a batch
// selected by twins (whose `twin` the selection sets).
export type BatchLine = NonNullable<CreateBatchBody["template"]>;

// What createBatch takes: lines (uploaded as an NDJSON file), or a rule selecting twins and the
// call made on each.
export type BatchInput =
	| {
			operation: string;
			// The lines, or the NDJSON text itself, one JSON object a line.
			lines: BatchLine[] | string;
			description?: JobDescription;
			twins?: never;
			template?: never;
	  }
	| {
			operation: string;
			twins: { match: string };
			template: BatchLine;
			description?: JobDescription;
			lines?: never;
	  };

export type ExportInput = NonNullable<operations["create_export"]["requestBody"]>["content"]["application/json"];

// A line of a batch's results: the line's number, the twin it ran on (a batch selected by twins),
// and the operation's answer: its status, the subcode of a refusal, and its body.
export type BatchResult = {
	line: number;
	twin?: string;
	status: number;
	subcode?: number;
	body: unknown;
};

export type FollowOptions = {
	// Between two reads of the record; 1000 ms by default.
	intervalMs?: number;
	// Stops the following: the loop throws the signal's reason.
	signal?: AbortSignal;
};

// The statuses a job ends in.
export const BATCH_ENDS: ReadonlySet<string> = new Set([
	"hash_mismatch",
	"validation_failed",
	"completed",
	"cancelled",
]);
export const EXPORT_ENDS: ReadonlySet<string> = new Set(["completed", "cancelled"]);

// The lines as NDJSON text; text is taken as it is.
export function ndjson(lines: BatchLine[] | string): string {
	return typeof lines === "string" ? lines : lines.map((line) => `${JSON.stringify(line)}\n`).join("");
}

// A job's record, read every interval: yielded when its status or progress changed since the
// last one yielded (the first always), to a status in `ends`, which is yielded last.
export async function* follow<Job extends { status: string; progress: unknown }>(
	read: (signal?: AbortSignal) => Promise<Job>,
	ends: ReadonlySet<string>,
	options: FollowOptions = {},
): AsyncGenerator<Job> {
	const { intervalMs = 1000, signal } = options;
	let last: string | undefined;
	for (;;) {
		signal?.throwIfAborted();
		const job = await read(signal);
		const seen = JSON.stringify([job.status, job.progress]);
		if (seen !== last) {
			last = seen;
			yield job;
		}
		if (ends.has(job.status)) return;
		await abortableSleep(intervalMs, signal);
	}
}

// The parsed lines of an NDJSON body as they arrive; only a line still arriving is held. A loop
// that stops early cancels the body.
export async function* ndjsonLines(body: ReadableStream<Uint8Array>): AsyncGenerator<unknown> {
	const reader = body.getReader();
	const decoder = new TextDecoder();
	let buffer = "";
	let done = false;
	try {
		while (!done) {
			const read = await reader.read();
			done = read.done;
			buffer += done ? decoder.decode() : decoder.decode(read.value, { stream: true });
			const lines = buffer.split("\n");
			// The last piece is a line still arriving, unless the body has ended.
			buffer = done ? "" : (lines.pop() ?? "");
			for (const line of lines) if (line.trim() !== "") yield JSON.parse(line);
		}
	} finally {
		if (!done) await reader.cancel().catch(() => {});
	}
}

import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import type { Database } from "../db/client";
import type { D1Meter } from "../db/meter";
import { findUpload } from "../db/docs";
import { insertJob, type JobRow, type JobSpec, jobCounts } from "../db/job-records";

// A job made (docs/batches.md): checked and written in the account's serialized step, so that
// two creates never both take the last free place. The job's own object is started first, with
// everything it needs; it waits for the row, and forgets itself when the row never comes.

export type JobLimits = { active: number; kept: number; retentionSeconds: number };

export type JobInput = {
	uuid: string;
	kind: JobRow["kind"];
	operation: string | null;
	// A file batch: the upload handler it takes over, and the hash it was said to have.
	upload?: { handler: string; hash?: string };
	details: Record<string, unknown>;
	// The record as the API shows it beyond the columns, at creation (progress and the parts
	// of `details` the record shows).
	record: Record<string, unknown>;
};

const noSuchUpload = () => new ApiError("upload_not_found", { description: "No such upload handler or URL" });

export async function createJob(
	db: Database,
	meter: D1Meter,
	caller: Caller,
	creator: JobSpec["creator"],
	input: JobInput,
	limits: JobLimits,
	start: (spec: JobSpec) => Promise<void>,
	at: number,
): Promise<JobRow> {
	const upload = input.upload
		? await meter.sightedOne(
				() => findUpload(db, input.upload!.handler),
				(row) => row.account === caller.account && row.user === caller.user && row.validity_ts > at,
			)
		: undefined;
	if (input.upload && !upload) throw noSuchUpload();
	if (upload && upload.state !== "uploaded")
		throw new ApiError("upload_empty", { description: "The upload URL has received no file yet" });
	const counts = await jobCounts(db, caller.account, limits);
	if (counts.active >= limits.active)
		throw new ApiError("active_jobs_limit", {
			description: `The account has ${limits.active} batches and exports not yet ended, its limit (MAX_ACTIVE_BATCHES)`,
		});
	if (counts.kept >= limits.kept)
		throw new ApiError("jobs_limit", {
			description: `The account keeps ${limits.kept} batches and exports, its limit (MAX_BATCHES): delete some, or wait for their expires_ts`,
		});
	const hash = upload?.hash ?? null;
	// A wrong hash makes a job that has ended: nothing is taken over, the handler stays live for
	// a retry with the right hash.
	const mismatch = input.upload?.hash !== undefined && input.upload.hash.toLowerCase() !== hash;
	const status = mismatch ? "hash_mismatch" : "new";
	const expires_ts = mismatch ? at + limits.retentionSeconds : null;
	const row: JobRow = {
		uuid: input.uuid,
		account: caller.account,
		user: caller.user,
		kind: input.kind,
		operation: input.operation,
		status,
		record: { ...input.record, hash },
		input: mismatch ? null : (upload?.object ?? null),
		created_ts: at,
		updated_ts: at,
		expires_ts,
	};
	await start({
		uuid: row.uuid,
		kind: row.kind,
		operation: row.operation,
		creator,
		input: row.input,
		hash,
		created_ts: at,
		details: input.details,
		record: row.record,
		status,
		expires_ts,
	});
	await insertJob(db, row, upload && !mismatch ? { handler: upload.handler, size: upload.size ?? 0 } : undefined);
	return row;
}

import { database } from "../db/client";
import { deleteLineMarksStep, type JobSpec } from "../db/job-records";
import { homeDatabase } from "../db/shards";
import { jobPrefix } from "./files";

// Line marks deleted per step of a deleted job.
const MARKS_PER_STEP = 1000;

// One step of removing a deleted (or expired) job: its files and input in R2, then its line marks
// in D1, a bounded number at a time. Answers whether anything is left. `ownsInput`: the job's
// row was written, and with it the upload taken over; a job whose create failed (its row never
// came) leaves the input to the upload, whose handler stays live for a retry.
export async function cleanupStep(env: Env, spec: JobSpec, ownsInput: boolean): Promise<boolean> {
	const listed = await env.DOCS.list({ prefix: jobPrefix(spec.uuid), limit: 100 });
	const keys = listed.objects.map((object) => object.key);
	if (spec.input !== null && ownsInput) keys.push(spec.input);
	if (keys.length) await env.DOCS.delete(keys);
	if (listed.truncated) return true;
	const db = database(homeDatabase(env, spec.creator.account));
	return deleteLineMarksStep(db, spec.uuid, MARKS_PER_STEP);
}

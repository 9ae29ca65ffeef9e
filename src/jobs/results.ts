import { now } from "../base/time";
import { jobFileKey } from "./files";
import { type Answer, concatBytes, type JobState, type StepRuntime } from "./store";
import { wholeParts } from "./export-lines";

// A batch's results file (docs/batches.md, "The record"): NDJSON, one line per line run, in line
// order, `{line, twin?, status, subcode?, body}`. Written in parts of at least 5 MiB (R2's
// multipart minimum, the last part excepted), one part a step.
const PART_BYTES = 5 * 1024 * 1024;
// Answers read from the object's storage at a time while a part fills.
const PAGE = 1000;

const encoder = new TextEncoder();

function resultLine(answer: Answer): string {
	const twin = answer.twin === null ? "" : `"twin":${JSON.stringify(answer.twin)},`;
	const subcode = answer.subcode === null ? "" : `"subcode":${answer.subcode},`;
	return `{"line":${answer.line},${twin}"status":${answer.status},${subcode}"body":${answer.body}}\n`;
}

export async function writeResultsStep(rt: StepRuntime, state: JobState): Promise<number | undefined> {
	const key = jobFileKey(state.spec.uuid, "results");
	state.writing ??= { uploadId: null, parts: [], line: 1 };
	const writing = state.writing;
	// Bytes short of a whole part wait in the object's storage from one step to the next: R2
	// takes parts of one size, the last excepted.
	const chunks: Uint8Array[] = [rt.store.pending("results")];
	let size = chunks[0]!.length;
	let more = true;
	while (size < PART_BYTES) {
		const answers = rt.store.answersFrom(writing.line, PAGE);
		if (answers.length === 0) {
			more = false;
			break;
		}
		for (const answer of answers) {
			const bytes = encoder.encode(resultLine(answer));
			chunks.push(bytes);
			size += bytes.length;
			writing.line = answer.line + 1;
		}
	}
	const bytes = concatBytes(chunks);
	const metadata = { httpMetadata: { contentType: "application/x-ndjson" } };
	if (!more && writing.uploadId === null) await rt.env.DOCS.put(key, bytes, metadata);
	else {
		const upload =
			writing.uploadId === null
				? await rt.env.DOCS.createMultipartUpload(key, metadata)
				: rt.env.DOCS.resumeMultipartUpload(key, writing.uploadId);
		writing.uploadId = upload.uploadId;
		// The last part may be short; none is sent empty (a retried step finds it sent).
		const last = bytes.length > 0 || writing.parts.length === 0 ? [bytes] : [];
		const { parts, rest } = more ? wholeParts(bytes, PART_BYTES) : { parts: last, rest: new Uint8Array() };
		for (const part of parts) writing.parts.push(await upload.uploadPart(writing.parts.length + 1, part));
		// The bytes left and the state that counts them are saved together.
		rt.store.replacePending("results", rest);
		rt.save();
		if (more) return now();
		await upload.complete(writing.parts);
	}
	state.status = state.status === "cancelling" ? "cancelled" : "completed";
	state.expires_ts = now() + Number(rt.env.BATCH_RETENTION_SECONDS);
	return state.expires_ts;
}

import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import { CHALLENGE, checkStatement } from "../policy/credential";
import { storedStanding } from "../http/auth";
import type { JobSpec } from "../db/job-records";
import { D1Meter } from "../db/meter";
import { Sessions } from "../db/shards";
import { now } from "../base/time";
import type { JobState } from "./store";

// The job's creator as it is now (docs/batches.md, "How lines run"): read again before every step,
// in one D1 query, as a stream token's holder is. A credential that no longer authenticates
// (secret deleted, replaced or expired, a token past its `exp`, the user deleted), or a statement
// that no longer allows making the job or calling its operation, stops the job with the refusal
// the creator would now get. A narrower rule only restricts: the lines find less.
export async function creatorNow(env: Env, spec: JobSpec, at: number): Promise<Caller> {
	const { creator } = spec;
	if (creator.exp !== null && creator.exp <= at) throw new ApiError("expired_credential", { headers: CHALLENGE });
	const shards = new Sessions(env, new D1Meter());
	const { principal, standing } = await storedStanding(shards, creator, at);
	const caller: Caller = {
		...principal,
		dict: creator.dict,
		credential: { type: creator.exp === null ? "secret" : "token", ...standing },
	};
	checkStatement(caller, spec.kind === "batch" ? "create_batch" : "create_export");
	if (spec.operation !== null) checkStatement(caller, spec.operation);
	// A match batch selects twins as a scan would.
	if (spec.details.twins !== undefined) checkStatement(caller, "scan_twins");
	return caller;
}

// The creator as it now is; or, when its credential no longer authenticates or its statement
// no longer allows the job, undefined, with the job stopped by the refusal the creator would get.
// `more` checks what the job's own stage needs of the creator besides (an export of index rows).
export async function creatorOrStop(
	env: Env,
	state: JobState,
	more: (caller: Caller) => void = () => {},
): Promise<Caller | undefined> {
	try {
		const caller = await creatorNow(env, state.spec, now());
		more(caller);
		return caller;
	} catch (error) {
		if (!(error instanceof ApiError)) throw error;
		state.stopped = { subcode: error.subcode, description: error.message };
		state.status = "cancelling";
		return undefined;
	}
}

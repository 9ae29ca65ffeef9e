import { now } from "../../base/time";
import type { JobSpec } from "../../db/job-records";
import type { CallerId, Host } from "../host";
import { createJob, type JobInput, type JobLimits } from "../job-writes";

// The account's object's part in batches and exports (docs/batches.md): making a job, in the
// account's serialized step. The job runs in its own object (BatchDO) from then on.
export function jobFacet(host: Host, limits: () => JobLimits) {
	return {
		createJob(caller: CallerId, creator: JobSpec["creator"], input: JobInput) {
			const action = input.kind === "batch" ? "create_batch" : "create_export";
			const start = async (spec: JobSpec) => {
				await host.env.BATCHES.getByName(spec.uuid).start(spec);
			};
			return host.write(caller, action, (db, current, meter) =>
				createJob(db, meter, current, creator, input, limits(), start, now()),
			);
		},
	};
}

// Where a job's files live in R2 (docs/batches.md): under `jobs/<uuid>/`, one object per file.
// A file batch's input stays where its upload put it, and goes with the job.
export const JOB_FILES = ["results", "twins", "identities", "ledgers", "indexes"] as const;
export type JobFile = (typeof JOB_FILES)[number];

export const jobPrefix = (job: string) => `jobs/${job}/`;
export const jobFileKey = (job: string, file: JobFile) => `${jobPrefix(job)}${file}`;

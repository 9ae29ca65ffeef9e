import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { ApiError, type ErrorDetail } from "../base/errors";
import { sibling } from "../base/shards";
import type { JobRow } from "../db/job-records";
import { checkStatement } from "../policy/credential";
import { parseRule } from "../rules/parse";
import { checkCall } from "./batch-lines";
import { BATCHABLE, isBatchable } from "./batchable";
import {
	creatorOf,
	fileExpiry,
	fileLink,
	fileLinkOut,
	jobObject,
	jobParam,
	listPage,
	progressOut,
	statusFilter,
	stoppedOut,
	visibleJob,
} from "./jobs";
import { defineOperation } from "./operation";
import { pageLimit } from "./paging";
import { jobDescription, jsonValue, mapOf, queryTimestamp, timestampOut, uuid, uuidOut, withMeta } from "./schemas";

// Batches (docs/batches.md): one write operation called once per line of an NDJSON file, or
// once per twin a rule selects, as its creator would call it, in the batch's own object.

export const BATCH_STATUSES = [
	"new",
	"copying",
	"copied",
	"hash_mismatch",
	"validating",
	"validation_failed",
	"processing",
	"processed",
	"writing_results",
	"completed",
	"cancel",
	"cancelling",
	"cancelled",
] as const;

const lineError = z.object({ line: z.number(), path: z.string(), message: z.string() });

const batchRecord = withMeta(
	z.object({
		batch: uuidOut,
		status: z.string(),
		operation: z.string(),
		user: uuidOut,
		hash: z.nullable(z.string()),
		description: z.optional(mapOf(jsonValue, 4096)),
		twins: z.optional(z.object({ match: z.string() })),
		template: z.optional(mapOf(jsonValue, 3)),
		created_ts: timestampOut,
		updated_ts: timestampOut,
		expires_ts: z.nullable(timestampOut),
		progress: progressOut,
		errors: z.optional(z.array(lineError).check(z.maxLength(100))),
		results: z.optional(fileLinkOut),
		stopped: z.optional(stoppedOut),
	}),
	{ id: "Batch" },
);

const HASH = z.string().check(z.regex(/^[0-9a-fA-F]{64}$/, "Must be 64 hexadecimal digits (SHA-256)"));

const createBody = z.strictObject({
	operation: z.string().check(z.maxLength(64)),
	handler: z.optional(uuid),
	hash: z.optional(HASH),
	twins: z.optional(z.strictObject({ match: z.string().check(z.maxLength(4096)) })),
	template: z.optional(
		z.strictObject({
			params: z.optional(z.record(z.string(), jsonValue)),
			query: z.optional(z.record(z.string(), jsonValue)),
			body: z.optional(jsonValue),
		}),
	),
	description: z.optional(jobDescription),
});
type CreateBody = z.infer<typeof createBody>;

// A twin's uuid that stands in for every selected twin while the template is checked.
const ANY_TWIN = "00000000-0000-8000-8000-000000000000";

// What the body's schema cannot say: which form it is, and whether its operation may be batched
// and its template run as a line of it. Every failure in one 400101.
function checkForm(body: CreateBody) {
	const details: ErrorDetail[] = [];
	const fail = (path: string, message: string) => details.push({ path, message });
	if (!isBatchable(body.operation)) fail("operation", `Must be one of ${Object.keys(BATCHABLE).join(", ")}`);
	const match = body.twins !== undefined;
	if (match === (body.handler !== undefined))
		fail("handler", "Give either handler (a file) or twins (a match), not both");
	if (!match && body.template !== undefined) fail("template", "Only a batch selected by twins takes a template");
	if (match && body.template === undefined) fail("template", "Required with twins");
	if (match && body.hash !== undefined) fail("hash", "Only a file batch takes a hash");
	if (match) {
		const parsed = parseRule(body.twins!.match);
		if (!parsed.ok) fail("twins.match", `${parsed.message} at position ${parsed.position}`);
	}
	if (match && isBatchable(body.operation) && body.template) {
		const names = BATCHABLE[body.operation].params;
		if (!Object.hasOwn(names, "twin")) fail("operation", "A batch selected by twins calls an operation on a twin");
		else if (body.template.params && Object.hasOwn(body.template.params, "twin"))
			fail("template.params.twin", "Set by the selection: leave it out");
		else {
			const line = { ...body.template, params: { ...body.template.params, twin: ANY_TWIN } };
			const checked = checkCall(body.operation, line, 0, "template.");
			for (const error of checked.errors) fail(error.path, error.message);
		}
	}
	if (details.length)
		throw new ApiError("validation", { description: `${details[0]!.path}: ${details[0]!.message}`, details });
}

// The API's record of a batch, from its row.
async function recordOf(
	ctx: Parameters<typeof fileLink>[0],
	row: JobRow,
	validity?: number,
): Promise<z.infer<typeof batchRecord>> {
	const { hash, description, twins, template, progress, errors, stopped } = row.record as Record<string, never>;
	const ended = row.status === "completed" || row.status === "cancelled";
	return {
		batch: row.uuid,
		status: row.status,
		operation: row.operation!,
		user: row.user,
		hash: hash ?? null,
		...(description !== undefined && { description }),
		...(twins !== undefined && { twins }),
		...(template !== undefined && { template }),
		created_ts: row.created_ts,
		updated_ts: row.updated_ts,
		expires_ts: row.expires_ts,
		progress: progress ?? { lines: null, done: 0, succeeded: 0, failed: 0 },
		...(errors !== undefined && { errors }),
		...(ended && { results: await fileLink(ctx, row, "results", fileExpiry(ctx, row, validity)) }),
		...(stopped !== undefined && { stopped }),
	};
}

const batchParams = z.strictObject({ batch: jobParam });

export const createBatch = defineOperation({
	name: "create_batch",
	summary: "Run one write operation once per line of an uploaded NDJSON file, or per twin a rule selects",
	description:
		"Makes a batch: the NDJSON file uploaded at `handler` (taken over), each line one call of `operation`, or `twins.match` selecting the twins the caller sees with `template` applied to each. The batch runs in steps as its creator would call each line; get_batch follows its progress.",
	refuses: ["upload_not_found", "upload_empty", "active_jobs_limit", "jobs_limit"],
	example: { operation: "create_twin", handler: "018f4c5e-8a3b-8c1d-9e2f-3a4b5c6d7e8f" },
	auth: "secret",
	body: createBody,
	status: 201,
	response: batchRecord,
	async run({ body }, ctx) {
		checkForm(body);
		checkStatement(ctx.caller, body.operation);
		if (body.twins) checkStatement(ctx.caller, "scan_twins");
		const { account } = ctx.caller;
		const creator = creatorOf(ctx.caller);
		const parts = {
			...(body.description !== undefined && { description: body.description }),
			...(body.twins !== undefined && { twins: body.twins, template: body.template }),
		};
		const row = await accountClient(ctx, account).createJob(ctx.caller, creator, {
			uuid: sibling(account),
			kind: "batch",
			operation: body.operation,
			...(body.handler !== undefined && { upload: { handler: body.handler, hash: body.hash } }),
			details: parts,
			record: { ...parts, progress: { lines: null, done: 0, succeeded: 0, failed: 0 } },
		});
		return recordOf(ctx, row);
	},
});

export const getBatches = defineOperation({
	name: "get_batches",
	summary: "The caller's batches, newest first",
	description:
		"The caller's batches (the administrator's: every user's), newest first, optionally of some statuses; a page may hold fewer than count while cursor is not null.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	query: z.strictObject({
		status: z.optional(statusFilter(BATCH_STATUSES)),
		count: z._default(z.optional(pageLimit(100)), 100),
		cursor: z.optional(z.string()),
	}),
	response: z.object({
		cursor: z.nullable(z.string()),
		batches: mapOf(
			z.object({
				status: z.string(),
				operation: z.string(),
				user: uuidOut,
				created_ts: timestampOut,
				updated_ts: timestampOut,
			}),
			100,
		),
	}),
	async run({ query }, ctx) {
		const { cursor, rows } = await listPage(ctx, "batch", query);
		const batches = Object.fromEntries(
			rows.map((row) => [
				row.uuid,
				{
					status: row.status,
					operation: row.operation!,
					user: row.user,
					created_ts: row.created_ts,
					updated_ts: row.updated_ts,
				},
			]),
		);
		return { cursor, batches };
	},
});

export const getBatch = defineOperation({
	name: "get_batch",
	summary: "A batch: its status, progress, errors, and a fresh URL to its results once it has ended",
	description:
		"A batch of the caller (the administrator's: any): status and progress; the first validation errors; once completed or cancelled, a results URL valid until validity_ts (an hour by default, at most 7 days, never past the batch's expires_ts).",
	refuses: ["not_found"],
	auth: "secret",
	params: batchParams,
	query: z.strictObject({ validity_ts: z.optional(queryTimestamp) }),
	response: batchRecord,
	async run({ params, query }, ctx) {
		const row = await visibleJob(ctx, "batch", params.batch);
		return recordOf(ctx, row, query.validity_ts);
	},
});

export const updateBatch = defineOperation({
	name: "update_batch",
	summary: "Cancel a batch: it stops between two lines",
	description:
		'Cancels a batch that has not ended (body exactly {"status": "cancel"}): the line running finishes, lines done stay done, and results of the lines run are written.',
	refuses: ["not_found", "job_state"],
	example: { status: "cancel" },
	auth: "secret",
	params: batchParams,
	body: z.strictObject({ status: z.literal("cancel") }),
	response: batchRecord,
	async run({ params }, ctx) {
		const row = await visibleJob(ctx, "batch", params.batch);
		const changed = await jobObject(ctx, row.uuid).cancel();
		return recordOf(ctx, { ...row, ...changed });
	},
});

export const deleteBatch = defineOperation({
	name: "delete_batch",
	summary: "Delete a batch that has ended, with its input and results",
	description:
		"Deletes a batch that has ended: from then on it is absent everywhere, its URLs answer 404171, and its input, results and rows are removed in the background.",
	refuses: ["not_found", "job_state"],
	auth: "secret",
	params: batchParams,
	response: batchRecord,
	async run({ params }, ctx) {
		const row = await visibleJob(ctx, "batch", params.batch);
		const changed = await jobObject(ctx, row.uuid).remove();
		// A deleted batch has no results: its record is made without a link.
		return recordOf(ctx, { ...row, ...changed, status: "deleting" });
	},
});

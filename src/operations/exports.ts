import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { ApiError } from "../base/errors";
import { sibling } from "../base/shards";
import type { JobRow } from "../db/job-records";
import {
	creatorOf,
	fileExpiry,
	fileLink,
	jobObject,
	jobParam,
	listPage,
	statusFilter,
	stoppedOut,
	visibleJob,
} from "./jobs";
import { defineOperation } from "./operation";
import { pageLimit } from "./paging";
import { jobDescription, jsonValue, mapOf, queryTimestamp, ruleText, timestampOut, uuidOut, withMeta } from "./schemas";

// Exports (docs/batches.md, "Exports"): what the creator sees of the account's twins,
// identities, ledgers and index rows, as gzip NDJSON files behind signed URLs. They replace the
// original's per-account databases.

export const EXPORT_STATUSES = [
	"new",
	"processing",
	"writing_results",
	"completed",
	"cancel",
	"cancelling",
	"cancelled",
] as const;
export const EXPORT_CONTENTS = ["twins", "identities", "ledgers", "indexes"] as const;
export type ExportContent = (typeof EXPORT_CONTENTS)[number];
const DEFAULT_CONTENTS: ExportContent[] = ["twins", "identities", "ledgers"];

const fileOut = z.object({ url: z.string(), validity_ts: timestampOut, lines: z.number(), bytes: z.number() });

const exportRecord = withMeta(
	z.object({
		export: uuidOut,
		status: z.string(),
		user: uuidOut,
		contents: z.array(z.string()).check(z.maxLength(EXPORT_CONTENTS.length)),
		match: z.nullable(z.string()),
		description: z.optional(mapOf(jsonValue, 4096)),
		created_ts: timestampOut,
		updated_ts: timestampOut,
		expires_ts: z.nullable(timestampOut),
		progress: z.object({ twins: z.nullable(z.number()), scanned: z.number(), exported: z.number() }),
		files: z.optional(mapOf(fileOut, EXPORT_CONTENTS.length)),
		stopped: z.optional(stoppedOut),
	}),
	{ id: "Export" },
);

type Files = Record<string, { lines: number; bytes: number }>;

async function recordOf(
	ctx: Parameters<typeof fileLink>[0],
	row: JobRow,
	validity?: number,
): Promise<z.infer<typeof exportRecord>> {
	const { contents, match, description, progress, files, stopped } = row.record as Record<string, never>;
	let links: Record<string, z.infer<typeof fileOut>> | undefined;
	if (row.status === "completed" && files) {
		const until = fileExpiry(ctx, row, validity);
		links = {};
		for (const [name, file] of Object.entries(files as Files))
			links[name] = { ...(await fileLink(ctx, row, name, until)), ...file };
	}
	return {
		export: row.uuid,
		status: row.status,
		user: row.user,
		contents: contents ?? DEFAULT_CONTENTS,
		match: match ?? null,
		...(description !== undefined && { description }),
		created_ts: row.created_ts,
		updated_ts: row.updated_ts,
		expires_ts: row.expires_ts,
		progress: progress ?? { twins: null, scanned: 0, exported: 0 },
		...(links && { files: links }),
		...(stopped !== undefined && { stopped }),
	};
}

const exportParams = z.strictObject({ export: jobParam });

export const createExport = defineOperation({
	name: "create_export",
	summary: "Write what the caller sees of the account's twins, identities, ledgers and index rows to files",
	description:
		"Makes an export: the account's twins the caller sees (those passing `match`), with the identities and ledger entries on them it sees, and with `indexes` every current row of the account's Indexes tables, as gzip NDJSON files; get_export gives their URLs once it has completed.",
	refuses: ["escalation", "active_jobs_limit", "jobs_limit"],
	example: { contents: ["twins", "ledgers"], match: "TWIN.site == 'north'" },
	auth: "secret",
	body: z.strictObject({
		contents: z.optional(z.array(z.enum(EXPORT_CONTENTS)).check(z.minLength(1), z.maxLength(16))),
		match: z.optional(ruleText),
		description: z.optional(jobDescription),
	}),
	status: 201,
	response: exportRecord,
	async run({ body }, ctx) {
		const contents = body.contents ? [...new Set(body.contents)] : DEFAULT_CONTENTS;
		// Index rows are filtered by the twins a reader sees, never by its entry rule: a role with
		// one may not read them whole (as query_indexes_table does).
		if (contents.includes("indexes") && ctx.caller.rules.entry !== null)
			throw new ApiError("escalation", {
				description: "Index rows come from every entry: a role with an entry rule may not export them",
			});
		const { account } = ctx.caller;
		const creator = creatorOf(ctx.caller);
		const parts = {
			contents,
			match: body.match ?? null,
			...(body.description !== undefined && { description: body.description }),
		};
		const row = await accountClient(ctx, account).createJob(ctx.caller, creator, {
			uuid: sibling(account),
			kind: "export",
			operation: null,
			details: parts,
			record: { ...parts, progress: { twins: null, scanned: 0, exported: 0 } },
		});
		return recordOf(ctx, row);
	},
});

export const getExports = defineOperation({
	name: "get_exports",
	summary: "The caller's exports, newest first",
	description:
		"The caller's exports (the administrator's: every user's), newest first, optionally of some statuses; a page may hold fewer than count while cursor is not null.",
	refuses: ["invalid_cursor"],
	auth: "secret",
	query: z.strictObject({
		status: z.optional(statusFilter(EXPORT_STATUSES)),
		count: z._default(z.optional(pageLimit(100)), 100),
		cursor: z.optional(z.string()),
	}),
	response: z.object({
		cursor: z.nullable(z.string()),
		exports: mapOf(
			z.object({
				status: z.string(),
				contents: z.array(z.string()).check(z.maxLength(EXPORT_CONTENTS.length)),
				user: uuidOut,
				created_ts: timestampOut,
				updated_ts: timestampOut,
			}),
			100,
		),
	}),
	async run({ query }, ctx) {
		const { cursor, rows } = await listPage(ctx, "export", query);
		const exports = Object.fromEntries(
			rows.map((row) => [
				row.uuid,
				{
					status: row.status,
					contents: (row.record.contents as string[] | undefined) ?? DEFAULT_CONTENTS,
					user: row.user,
					created_ts: row.created_ts,
					updated_ts: row.updated_ts,
				},
			]),
		);
		return { cursor, exports };
	},
});

export const getExport = defineOperation({
	name: "get_export",
	summary: "An export: its status, progress, and fresh URLs to its files once it has completed",
	description:
		"An export of the caller (the administrator's: any): status and progress; once completed, a URL per file valid until validity_ts (an hour by default, at most 7 days, never past the export's expires_ts).",
	refuses: ["not_found"],
	auth: "secret",
	params: exportParams,
	query: z.strictObject({ validity_ts: z.optional(queryTimestamp) }),
	response: exportRecord,
	async run({ params, query }, ctx) {
		const row = await visibleJob(ctx, "export", params.export);
		return recordOf(ctx, row, query.validity_ts);
	},
});

export const updateExport = defineOperation({
	name: "update_export",
	summary: "Cancel an export: it stops and keeps no file",
	description:
		'Cancels an export that has not ended (body exactly {"status": "cancel"}): a cancelled export keeps no file.',
	refuses: ["not_found", "job_state"],
	example: { status: "cancel" },
	auth: "secret",
	params: exportParams,
	body: z.strictObject({ status: z.literal("cancel") }),
	response: exportRecord,
	async run({ params }, ctx) {
		const row = await visibleJob(ctx, "export", params.export);
		const changed = await jobObject(ctx, row.uuid).cancel();
		return recordOf(ctx, { ...row, ...changed });
	},
});

export const deleteExport = defineOperation({
	name: "delete_export",
	summary: "Delete an export that has ended, with its files",
	description:
		"Deletes an export that has ended: from then on it is absent everywhere, its URLs answer 404171, and its files are removed in the background.",
	refuses: ["not_found", "job_state"],
	auth: "secret",
	params: exportParams,
	response: exportRecord,
	async run({ params }, ctx) {
		const row = await visibleJob(ctx, "export", params.export);
		const changed = await jobObject(ctx, row.uuid).remove();
		// A deleted export has no files: its record is made without links.
		return recordOf(ctx, { ...row, ...changed, status: "deleting" });
	},
});

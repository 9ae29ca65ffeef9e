import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import { dbOf } from "../db/client";
import { jobByUuid } from "../db/job-records";
import { readRange } from "../storage/range";
import { verifyJobFile } from "../storage/job-links";
import { defineOperation } from "./operation";
import { uuid } from "./schemas";

// The GET of a job file's URL (docs/batches.md): a batch's results or an export's files. The
// handler is the credential; an unknown, forged or expired one, or one of a deleted job, is
// 404171 like a doc's download URL.

const noSuchFile = () => new ApiError("upload_not_found", { description: "No such download URL" });

// The bytes are the file: an export's are gzip, served as such and never with Content-Encoding.
const TYPES: Record<string, { type: string; name: string }> = {
	results: { type: "application/x-ndjson", name: "results.ndjson" },
	twins: { type: "application/gzip", name: "twins.ndjson.gz" },
	identities: { type: "application/gzip", name: "identities.ndjson.gz" },
	ledgers: { type: "application/gzip", name: "ledgers.ndjson.gz" },
	indexes: { type: "application/gzip", name: "indexes.ndjson.gz" },
};

export const downloadFile = defineOperation({
	name: "download_file",
	summary: "The GET of a job file's URL: a batch's results or an export's file, whole or one range",
	description:
		"The GET of a URL that get_batch or get_export answered: the file's bytes, whole or one Range, as an attachment. HEAD answers the same headers without the bytes.",
	refuses: ["range_unsatisfiable"],
	auth: "capability",
	params: z.strictObject({ account: uuid, handler: z.string().check(z.maxLength(160)) }),
	headers: ["range"],
	answers: "bytes",
	response: z.never(),
	async run({ params, headers }, ctx) {
		const link = await verifyJobFile(ctx.env.WEBHOOK_KEY, params.account, params.handler, Date.now());
		const kind = link && Object.hasOwn(TYPES, link.file) ? TYPES[link.file] : undefined;
		const row = link && kind ? await jobByUuid(dbOf(ctx), link.job) : undefined;
		if (!link || !kind || !row || row.account !== params.account || row.status === "deleting") throw noSuchFile();
		const key = `jobs/${link.job}/${link.file}`;
		const head = await ctx.env.DOCS.head(key);
		if (!head) throw noSuchFile();
		const range = readRange(headers.range, head.size);
		if (range.kind === "unsatisfiable")
			throw new ApiError("range_unsatisfiable", { headers: { "content-range": `bytes */${head.size}` } });
		const part = range.kind === "part" ? range.range : undefined;
		const object =
			ctx.request.method === "HEAD" ? head : await ctx.env.DOCS.get(key, part ? { range: part } : undefined);
		if (!object) throw noSuchFile();
		const body = "body" in object ? (object as R2ObjectBody).body : null;
		const out = new Headers({
			"content-type": kind.type,
			"content-length": String(part ? part.length : head.size),
			etag: head.httpEtag,
			"accept-ranges": "bytes",
			"content-disposition": `attachment; filename="${kind.name}"`,
			"cache-control": "private, no-store",
			"x-content-type-options": "nosniff",
		});
		if (part) out.set("content-range", `bytes ${part.offset}-${part.offset + part.length - 1}/${head.size}`);
		return new Response(body, { status: part ? 206 : 200, headers: out });
	},
});

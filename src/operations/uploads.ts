import * as z from "zod/mini";
import { sibling } from "../base/shards";
import { accountClient } from "../account/client";
import { randomBase64Url, sha256Hex } from "../base/crypto";
import { ApiError } from "../base/errors";
import { publicOrigin } from "../base/origin";
import { now } from "../base/time";
import { lastingAtMost, madeUntil } from "../policy/token";
import { keptMediaType } from "../storage/media-type";
import { storeStreaming } from "../storage/objects";
import { UPLOAD_RENEW_SECONDS } from "../account/doc-writes";
import { defineOperation } from "./operation";
import { timestamp, timestampOut, uuid, uuidOut, withMeta } from "./schemas";

// A file goes up in two steps: create_upload_url hands out a URL and its handler, the client
// PUTs the bytes there (upload_to_cache), and attach_twin_doc files the upload under a name on
// a twin (operations/docs.ts).

// An upload URL lives an hour at most.
export const MAX_UPLOAD_VALIDITY_SECONDS = 3600;

export const createUploadUrl = defineOperation({
	name: "create_upload_url",
	// Its answer is a credential: never kept for replays.
	replays: false,
	summary: "An upload URL and its handler: PUT one file there, then attach it to a twin",
	description:
		"An upload URL (at most an hour, never past the User Token that asks for it) and its handler: PUT one file's bytes there, then attach it to a twin with attach_twin_doc.",
	refuses: ["upload_limit", "webhooks_unconfigured"],
	example: {},
	auth: "secret",
	body: z.strictObject({ validity_ts: z.optional(timestamp) }),
	status: 201,
	response: z.object({ handler: uuidOut, url: z.string(), validity_ts: timestampOut }),
	async run({ body }, ctx) {
		const origin = publicOrigin(ctx.env, "Upload URLs are");
		const at = now();
		const asked = body.validity_ts ?? at + MAX_UPLOAD_VALIDITY_SECONDS;
		if (!(asked > at && asked <= at + MAX_UPLOAD_VALIDITY_SECONDS)) {
			const message = `Must be later than now and at most ${MAX_UPLOAD_VALIDITY_SECONDS} seconds from now`;
			throw new ApiError("validation", {
				description: `validity_ts: ${message}`,
				details: [{ path: "validity_ts", message }],
			});
		}
		const validity_ts = lastingAtMost(asked, madeUntil(ctx.caller.credential!));
		const handler = sibling(ctx.caller.account);
		// 192 random bits; only its hash is stored.
		const token = randomBase64Url(24);
		await accountClient(ctx, ctx.caller.account).createUpload(ctx.caller, {
			handler,
			tokenHash: await sha256Hex(token),
			validity_ts,
		});
		return { handler, url: `${origin}/cache/${ctx.caller.account}/${handler}?token=${token}`, validity_ts };
	},
});

export const invalidateUploadUrl = defineOperation({
	name: "invalidate_upload_url",
	summary: "End one of the caller's upload URLs at once; an uploaded file not yet attached is deleted",
	description:
		"Ends one of the caller's account's upload URLs at once; a file uploaded there and not yet attached is deleted.",
	refuses: ["upload_not_found"],
	auth: "secret",
	params: z.strictObject({ handler: uuid }),
	response: z.object({ handler: uuidOut }),
	async run({ params }, ctx) {
		return accountClient(ctx, ctx.caller.account).invalidateUpload(ctx.caller, params.handler);
	},
});

// Content-Length as a byte count; anything else counts as absent.
function declaredLength(header: string | undefined): number | undefined {
	return header !== undefined && /^\d{1,16}$/.test(header.trim()) ? Number(header.trim()) : undefined;
}

export const uploadToCache = defineOperation({
	name: "upload_to_cache",
	summary: "The PUT of an upload URL: the file's bytes, streamed into storage and hashed on the way",
	description:
		"The PUT of an upload URL: the file's bytes with a Content-Length, streamed into storage and hashed (SHA-256) on the way. One file per URL. Its Content-Type is kept and served with the doc's downloads (application/octet-stream when absent or not a media type).",
	refuses: ["length_required", "upload_too_large", "upload_used", "upload_in_progress", "doc_bytes_limit"],
	auth: "capability",
	params: z.strictObject({ account: uuid, handler: uuid }),
	query: z.strictObject({ token: z.string().check(z.maxLength(256)) }),
	headers: ["content-length", "content-type"],
	body: "stream",
	response: z.object({
		handler: uuidOut,
		size: z.number().check(z.int()),
		hash: withMeta(z.string(), { description: "SHA-256 of the bytes, lowercase hex" }),
	}),
	async run({ params, query, headers, body }, ctx) {
		// Both refusals come before the URL is looked at and before a byte is read.
		const length = declaredLength(headers["content-length"]);
		if (length === undefined) throw new ApiError("length_required");
		const max = Number(ctx.env.MAX_UPLOAD_BYTES);
		if (length > max)
			throw new ApiError("upload_too_large", {
				description: `The file is larger than ${max} bytes (MAX_UPLOAD_BYTES)`,
			});
		const account = accountClient(ctx, params.account);
		const { object } = await account.claimUpload(params.account, params.handler, await sha256Hex(query.token), length);
		// The URL is this PUT's while it renews its lease; a PUT whose Worker dies stops renewing.
		const alive = { everyMs: UPLOAD_RENEW_SECONDS * 1000, check: () => account.renewUpload(params.handler, object) };
		const stored = await storeStreaming(ctx.env.DOCS, object, body ?? new Blob([]).stream(), length, alive);
		// Released as dead, invalidated or expired while it streamed: the URL is no longer its own.
		if (!stored.ok && stored.lost)
			throw new ApiError("upload_not_found", { description: "No such upload handler or URL" });
		if (!stored.ok) {
			await account.reopenUpload(params.account, params.handler, object);
			const message = `The body ended before, or ran past, the ${length} bytes of its Content-Length`;
			throw new ApiError("validation", { description: message, details: [{ path: "body", message }] });
		}
		return account.finishUpload(params.handler, object, stored.hash, keptMediaType(headers["content-type"]));
	},
});

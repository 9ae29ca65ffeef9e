import * as z from "zod/mini";
import { accountClient } from "../account/client";
import { docRecord } from "../account/doc-writes";
import { MAX_TWIN_DOCS_CEILING } from "../base/limits";
import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";
import { publicOrigin } from "../base/origin";
import { now } from "../base/time";
import { findDoc, findDocByUuid, listTwinDocs } from "../db/docs";
import { checkStatement } from "../policy/credential";
import { lastingAtMost, madeUntil } from "../policy/token";
import { Budget, refuseOverBudget, regexError, search, WORK_UNITS } from "../rules/strings";
import { canSign, type Disposition, signDownload, verifyDownload } from "../storage/links";
import { showsInline } from "../storage/media-type";
import { readRange } from "../storage/range";
import type { Context } from "./operation";
import { defineOperation, JsonText } from "./operation";
import {
	decodedOnce,
	description,
	descriptionOut,
	mapOf,
	queryBoolean,
	queryTimestamp,
	timestampOut,
	uuid,
	uuidOut,
	withMeta,
} from "./schemas";
import { twinInPath } from "./twins";
import { cursorIn, openCursor, sealCursor } from "./paging";
import { dbOf } from "../db/client";

// Docs: files attached to twins, their bytes in R2 (src/storage/), their rows in D1. Whoever
// sees a twin sees all its docs and may attach to it, alive or terminated; only the account
// that attached a doc changes or deletes it. Every route under a twin first finds the twin
// visible to the caller (`locate`), so a hidden twin answers as an absent one whatever the
// rest of the request holds.

const DOC_NAME = /^([a-zA-Z0-9_-]{1,32}\/){0,5}[a-zA-Z0-9_-]{1,32}(\.[a-zA-Z0-9]{1,8})?$/;
const docName = z
	.string()
	.check(z.regex(DOC_NAME, "Must match ^([a-zA-Z0-9_-]{1,32}/){0,5}[a-zA-Z0-9_-]{1,32}(\\.[a-zA-Z0-9]{1,8})?$"));

// In a path the name follows /docs/ with its folders' '/' as they are (or as %2F), decoded once.
const docNameParam = decodedOnce(docName);

const MAX_DOCS_PER_ATTACH = 10;
const MAX_MASK_LENGTH = 256;
// A mask runs over at most MAX_TWIN_DOCS names of at most 203 characters.
const MASK_WORK_UNITS = 5 * WORK_UNITS;
// A download URL lives an hour unless asked otherwise, a week at most.
const DOWNLOAD_VALIDITY_SECONDS = 3600;
const MAX_DOWNLOAD_VALIDITY_SECONDS = 7 * 24 * 3600;

const STORAGE_CLASSES = ["access_optimized", "cost_optimized"] as const;

const docOut = z.object({
	creation_certificate: z.object({
		size: z.number().check(z.int()),
		hash: z.string(),
		created_ts: timestampOut,
		creator: uuidOut,
	}),
	storage_class: z.enum(STORAGE_CLASSES),
	content_type: withMeta(z.string(), {
		description: "The media type its downloads are served with: its upload's Content-Type",
	}),
	updated_ts: timestampOut,
	description: z.optional(descriptionOut),
	status: z.literal("ok"),
	download: z.optional(z.object({ url: z.string(), validity_ts: timestampOut })),
});

// [created_ts, updated_ts, size], under the doc's name or, in the tree view, its last segment.
const listedOut = z.tuple([timestampOut, timestampOut, z.number().check(z.int())]);
type Tree = { [name: string]: z.infer<typeof listedOut> | Tree };
// Folders nest at most five deep; no level holds more than the twin's docs. The id names the
// recursion in the API document.
const treeOut: z.ZodMiniType<Tree> = withMeta(
	z.lazy(() => mapOf(z.union([listedOut, treeOut]), MAX_TWIN_DOCS_CEILING)),
	{ id: "DocTree" },
);
const listOut = z.object({ docs: z.union([mapOf(listedOut, MAX_TWIN_DOCS_CEILING), treeOut]) });
// get_twin_docs pages a twin holding more docs than one page (each account attaches up to
// MAX_TWIN_DOCS): `cursor` is there only while more follow, so a twin's usual answer is the
// original's.
const pageOut = z.object({
	docs: z.union([mapOf(listedOut, MAX_TWIN_DOCS_CEILING), treeOut]),
	cursor: withMeta(z.optional(z.string()), {
		description: "Present while more docs follow: give it as `cursor` for the next page",
	}),
});
const DOCS_PAGE = MAX_TWIN_DOCS_CEILING;

const view = z._default(z.optional(z.enum(["list", "tree"])), "list");
type Listed = { name: string; created_ts: number; updated_ts: number; size: number };

// The list view keys each doc by its name, in byte order; the tree view nests folders as keys
// ending in '/', so a file and a folder may share a name (`a` and `a/`).
// Written as JSON text with Maps, not returned as an object: a JS object, and so
// JSON.stringify, puts the keys that read as array indexes ("0", "2024", names a doc may have)
// first, in numeric order, and the byte order of the contract would be lost.
type Level = Map<string, z.infer<typeof listedOut> | Level>;

function listing(docs: Listed[], as: "list" | "tree", cursor?: string) {
	const sorted = [...docs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
	const out: Level = new Map();
	for (const doc of sorted) {
		const entry: z.infer<typeof listedOut> = [doc.created_ts, doc.updated_ts, doc.size];
		if (as === "list") {
			out.set(doc.name, entry);
			continue;
		}
		const segments = doc.name.split("/");
		let level = out;
		for (const folder of segments.slice(0, -1)) {
			const key = `${folder}/`;
			if (!level.has(key)) level.set(key, new Map());
			level = level.get(key) as Level;
		}
		level.set(segments.at(-1)!, entry);
	}
	return new JsonText(`{"docs":${levelJson(out)}${cursor === undefined ? "" : `,"cursor":${JSON.stringify(cursor)}`}}`);
}

// Sorted full names put every level's keys in byte order too: a folder's key is the prefix of
// its names, '/' included.
function levelJson(level: Level): string {
	const members = [...level].map(
		([key, value]) => `${JSON.stringify(key)}:${value instanceof Map ? levelJson(value) : JSON.stringify(value)}`,
	);
	return `{${members.join(",")}}`;
}

type SecretContext = Context & { caller: Caller };

// A twin's docs, whoever attached them, live in the twin owner's database, which the twin's uuid
// names, and so does a doc's uuid (account/doc-writes.ts attachDocs).
const twinDocs = (ctx: Context, id: string) => dbOf({ d1: ctx.shards.for(id) });

const twinParams = z.strictObject({ twin: uuid });
const docParams = z.strictObject({ twin: uuid, name: docNameParam });

export const attachTwinDoc = defineOperation({
	name: "attach_twin_doc",
	summary: "File uploaded files under names on a twin the caller can see, all or none",
	description:
		"Files uploaded files (by handler) under names on a twin the caller can see, alive or terminated, all or none; a given hash must match the upload's SHA-256.",
	refuses: [
		"not_found",
		"upload_not_found",
		"upload_empty",
		"hash_mismatch",
		"conflict",
		"doc_bytes_limit",
		"twin_doc_limit",
	],
	example: {
		docs: { "manuals/pump.pdf": { handler: "6f1c2b3a-4d5e-4f60-8a7b-9c0d1e2f3a4b", description: { lang: "en" } } },
	},
	auth: "secret",
	params: twinParams,
	locate: twinInPath,
	body: z.strictObject({
		docs: z
			.record(
				docName,
				z.strictObject({
					handler: uuid,
					hash: z.optional(z.string().check(z.regex(/^[0-9a-fA-F]{64}$/, "Must be 64 hexadecimal digits (SHA-256)"))),
					storage_class: z.optional(z.enum(STORAGE_CLASSES)),
					description: z.optional(z.nullable(description)),
				}),
			)
			.check(
				z.refine(
					(docs) => Object.keys(docs).length >= 1 && Object.keys(docs).length <= MAX_DOCS_PER_ATTACH,
					`Must hold 1 to ${MAX_DOCS_PER_ATTACH} docs`,
				),
				z.refine(
					(docs) => new Set(Object.values(docs).map((doc) => doc.handler)).size === Object.keys(docs).length,
					"Each doc needs its own handler",
				),
			),
	}),
	status: 201,
	response: z.object({ docs: mapOf(docOut, MAX_DOCS_PER_ATTACH) }),
	async run({ located: twin, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).attachDocs(ctx.caller, twin.uuid, body.docs);
	},
});

export const getTwinDocs = defineOperation({
	name: "get_twin_docs",
	summary: "The docs of a twin the caller can see, whoever attached them, as a list or a folder tree",
	description:
		"The docs on a twin the caller can see, whoever attached them, as [created_ts, updated_ts, size] by name (view=list) or nested by folder (view=tree); mask filters names by a regular expression. A page examines 1000 names at most; `cursor` is answered while more follow.",
	refuses: ["not_found", "invalid_cursor"],
	auth: "secret",
	params: twinParams,
	locate: twinInPath,
	query: z.strictObject({
		mask: z.optional(
			z.string().check(
				z.maxLength(MAX_MASK_LENGTH),
				z.superRefine((pattern, ctx) => {
					const error = regexError(pattern);
					if (error) ctx.addIssue({ code: "custom", message: `${error.message} at position ${error.offset}` });
				}),
			),
		),
		view,
		cursor: z.optional(cursorIn),
	}),
	response: pageOut,
	async run({ located: twin, query }, ctx) {
		// A position is a name of the twin, which the caller sees: the cursor binds it to the twin.
		const scope = `get_twin_docs/${ctx.caller.user}/${twin.uuid}`;
		const position = await openCursor(ctx.env, scope, query.cursor, z.tuple([z.string()]));
		const read = await listTwinDocs(twinDocs(ctx, twin.uuid), twin.uuid, position?.[0] ?? "", DOCS_PAGE + 1);
		const rows = read.slice(0, DOCS_PAGE);
		const cursor = read.length > DOCS_PAGE ? await sealCursor(ctx.env, scope, [rows.at(-1)!.name]) : undefined;
		const budget = new Budget(MASK_WORK_UNITS);
		const { mask } = query;
		const matching =
			mask === undefined ? rows : refuseOverBudget("mask", () => rows.filter((row) => search(row.name, mask, budget)));
		return listing(matching, query.view, cursor);
	},
});

export const deleteTwinDocs = defineOperation({
	name: "delete_twin_docs",
	summary: "Delete the docs the caller's account attached to a twin; other accounts' stay",
	description:
		"Deletes every doc the caller's account attached to a twin it can see, with their files; other accounts' docs stay. Answers the deleted ones as get_twin_docs lists them.",
	refuses: ["not_found"],
	auth: "secret",
	params: twinParams,
	locate: twinInPath,
	query: z.strictObject({ view }),
	response: listOut,
	async run({ located: twin, query }, ctx) {
		const { docs } = await accountClient(ctx, ctx.caller.account).deleteDocs(ctx.caller, twin.uuid);
		return listing(docs, query.view);
	},
});

export const getTwinDoc = defineOperation({
	name: "get_twin_doc",
	summary: "One doc of a twin the caller can see; with download=true, a download URL for it too",
	description:
		"One doc on a twin the caller can see; with download=true also a download URL, valid until validity_ts (an hour by default, a week at most, never past the User Token that asks for it). With disposition=inline the URL serves a PDF, a PNG, JPEG, GIF or WebP image, plain text, audio or video for the browser to show (sandboxed); any other type stays an attachment.",
	refuses: ["not_found", "webhooks_unconfigured"],
	auth: "secret",
	params: docParams,
	locate: twinInPath,
	query: z
		.strictObject({
			download: z._default(z.optional(queryBoolean), false),
			validity_ts: z.optional(queryTimestamp),
			disposition: withMeta(z.optional(z.enum(["attachment", "inline"])), {
				description: "How the download URL serves the file: attachment (the default), or inline for a safe type",
			}),
		})
		.check(
			z.refine((q) => q.download || q.validity_ts === undefined, {
				message: "Only with download=true",
				path: ["validity_ts"],
			}),
			z.refine((q) => q.download || q.disposition === undefined, {
				message: "Only with download=true",
				path: ["disposition"],
			}),
		),
	response: docOut,
	async run({ located: twin, params, query }, ctx) {
		const at = now();
		let link: ((doc: string) => Promise<{ url: string; validity_ts: number }>) | undefined;
		if (query.download) {
			// Issuing the URL is what download_doc permits: the GET of the URL has no caller.
			checkStatement(ctx.caller, "download_doc");
			link = await downloadLink(ctx, at, query.validity_ts, query.disposition ?? "attachment");
		}
		const row = await findDoc(twinDocs(ctx, twin.uuid), twin.uuid, params.name);
		if (!row) throw new ApiError("not_found", { description: "No such doc" });
		return { ...docRecord(row), ...(link && { download: await link(row.uuid) }) };
	},
});

// Everything a download URL needs is checked before the doc is read: the validity asked for,
// PUBLIC_URL and the key.
async function downloadLink(ctx: SecretContext, at: number, asked: number | undefined, disposition: Disposition) {
	const wanted = asked ?? at + DOWNLOAD_VALIDITY_SECONDS;
	if (!(wanted > at && wanted <= at + MAX_DOWNLOAD_VALIDITY_SECONDS)) {
		const message = `Must be later than now and at most ${MAX_DOWNLOAD_VALIDITY_SECONDS} seconds from now`;
		throw new ApiError("validation", {
			description: `validity_ts: ${message}`,
			details: [{ path: "validity_ts", message }],
		});
	}
	const validity_ts = lastingAtMost(wanted, madeUntil(ctx.caller.credential!));
	const origin = publicOrigin(ctx.env, "Download URLs are");
	const account = ctx.caller.account;
	const expiry = Math.round(validity_ts * 1000);
	if (!canSign(ctx.env.WEBHOOK_KEY)) {
		throw new ApiError("webhooks_unconfigured", {
			description: "Download URLs are not configured on this server (WEBHOOK_KEY)",
		});
	}
	return async (doc: string) => ({
		url: `${origin}/download/${account}/${await signDownload(ctx.env.WEBHOOK_KEY, account, doc, expiry, disposition)}`,
		validity_ts: expiry / 1000,
	});
}

export const updateTwinDoc = defineOperation({
	name: "update_twin_doc",
	summary: "Change or remove the description of a doc the caller's account attached",
	description:
		"Changes or (with null) removes the description of a doc the caller's account attached to a twin it can see.",
	refuses: ["not_found", "not_owner"],
	example: { description: { lang: "de" } },
	auth: "secret",
	params: docParams,
	locate: twinInPath,
	body: z.strictObject({ description: z.optional(z.nullable(description)) }),
	response: docOut,
	async run({ located: twin, params, body }, ctx) {
		return accountClient(ctx, ctx.caller.account).updateDoc(
			ctx.caller,
			twin.uuid,
			params.name,
			body.description,
			ctx.line,
		);
	},
});

export const deleteTwinDoc = defineOperation({
	name: "delete_twin_doc",
	summary: "Delete a doc the caller's account attached, with its file; answers it as it was",
	description:
		"Deletes a doc the caller's account attached to a twin it can see, with its file, and answers it as it was.",
	refuses: ["not_found", "not_owner"],
	auth: "secret",
	params: docParams,
	locate: twinInPath,
	response: docOut,
	async run({ located: twin, params }, ctx) {
		return accountClient(ctx, ctx.caller.account).deleteDoc(ctx.caller, twin.uuid, params.name, ctx.line);
	},
});

const noSuchDownload = () => new ApiError("upload_not_found", { description: "No such download URL" });

export const downloadDoc = defineOperation({
	name: "download_doc",
	summary: "The GET of a download URL: the doc's bytes, whole or one range, with its media type",
	description:
		"The GET of a download URL: the doc's bytes with its upload's media type, whole or one Range, as an attachment, or inline for a safe type when the URL was made so; always sandboxed (Content-Security-Policy) and never sniffed. HEAD answers the same headers without the bytes.",
	refuses: ["range_unsatisfiable"],
	auth: "capability",
	params: z.strictObject({ account: uuid, handler: z.string().check(z.maxLength(128)) }),
	headers: ["range"],
	answers: "bytes",
	response: z.never(),
	async run({ params, headers }, ctx) {
		const link = await verifyDownload(ctx.env.WEBHOOK_KEY, params.account, params.handler, Date.now());
		// The URL names the downloader's account; the doc's uuid names its twin's database.
		const row = link === undefined ? undefined : await findDocByUuid(twinDocs(ctx, link.doc), link.doc);
		if (!row) throw noSuchDownload();
		const range = readRange(headers.range, row.size);
		if (range.kind === "unsatisfiable")
			throw new ApiError("range_unsatisfiable", { headers: { "content-range": `bytes */${row.size}` } });
		const part = range.kind === "part" ? range.range : undefined;
		// HEAD answers what GET would, and reads no byte of the file.
		const head = ctx.request.method === "HEAD";
		const object = head
			? await ctx.env.DOCS.head(row.object)
			: await ctx.env.DOCS.get(row.object, part ? { range: part } : undefined);
		if (!object) throw noSuchDownload();
		const body = "body" in object ? (object as R2ObjectBody).body : null;
		// Anyone's bytes on the API's origin: shown only when asked for and of a type that runs
		// nothing, and never able to run a script or load anything even then.
		const disposition = link!.disposition === "inline" && showsInline(row.content_type) ? "inline" : "attachment";
		const out = new Headers({
			"content-type": row.content_type,
			"content-length": String(part ? part.length : row.size),
			etag: `"${row.hash}"`,
			"accept-ranges": "bytes",
			"content-disposition": `${disposition}; filename="${row.name.split("/").at(-1)}"`,
			"cache-control": "private, no-store",
			"x-content-type-options": "nosniff",
			"content-security-policy": "sandbox; default-src 'none'",
		});
		if (part) out.set("content-range", `bytes ${part.offset}-${part.offset + part.length - 1}/${row.size}`);
		return new Response(body, { status: part ? 206 : 200, headers: out });
	},
});

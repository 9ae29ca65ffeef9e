import * as z from "zod/mini";
import { ApiError } from "../base/errors";
import type { Caller } from "../base/caller";
import { publicOrigin } from "../base/origin";
import { now } from "../base/time";
import { dbOf } from "../db/client";
import { streamBinding } from "../base/stream-token";
import { findJob, type JobAnswer, type JobCreator, type JobKind, type JobRow, listJobs } from "../db/job-records";
import { type Outcome, unwrap } from "../account/outcome";
import { isAdministrator } from "../policy/grant";
import { lastingAtMost, madeUntil } from "../policy/token";
import { signJobFile } from "../storage/job-links";
import { openCursor, sealCursor } from "./paging";
import type { Context } from "./operation";
import { timestampOut, uuidOut, withMeta } from "./schemas";

// What batches and exports share (docs/batches.md): finding a job the caller may see, listing,
// the links to a job's files, and the calls to the job's object. A job belongs to its creator;
// the account's administrator sees every one. Any other job, another account's, or a path that
// is no uuid, is 404102 after the same one read: absent and hidden answer alike.

type SecretContext = Context & { caller: Caller };

// URLs to a job's files: an hour by default, 7 days at most, never past the job's expiry nor
// the token that asks.
const FILE_VALIDITY_SECONDS = 3600;
const MAX_FILE_VALIDITY_SECONDS = 604_800;

// A list reads at most this many rows past `count`.
const LIST_EXTRA = 10;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const notFound = () => new ApiError("not_found", { description: "No such job" });

const sees = (caller: Caller, kind: JobKind) => (row: JobRow) =>
	row.kind === kind && (row.user === caller.user || isAdministrator(caller));

// The job the path names, of this kind, if the caller may see it; else 404102. A path that is no
// uuid is looked up all the same (it finds nothing), so that it costs what an absent job does.
export async function visibleJob(ctx: SecretContext, kind: JobKind, uuid: string): Promise<JobRow> {
	const key = UUID.test(uuid) ? uuid : "";
	const row = await ctx.meter.sightedOne(() => findJob(dbOf(ctx), ctx.caller.account, key), sees(ctx.caller, kind));
	if (!row || row.status === "deleting") throw notFound();
	return row;
}

export const jobParam = z.string().check(z.maxLength(64));

// `validity_ts` of a get: later than now, at most 7 days ahead; the link ends no later than the
// job (and the credential asking).
export function fileExpiry(ctx: SecretContext, row: JobRow, asked: number | undefined): number {
	const at = now();
	const wanted = asked ?? at + FILE_VALIDITY_SECONDS;
	if (!(wanted > at && wanted <= at + MAX_FILE_VALIDITY_SECONDS)) {
		const message = `Must be later than now and at most ${MAX_FILE_VALIDITY_SECONDS} seconds from now`;
		throw new ApiError("validation", {
			description: `validity_ts: ${message}`,
			details: [{ path: "validity_ts", message }],
		});
	}
	const until = lastingAtMost(wanted, madeUntil(ctx.caller.credential!));
	return row.expires_ts === null ? until : Math.min(until, row.expires_ts);
}

// A fresh URL to one of the job's files, valid until `until`.
export async function fileLink(ctx: SecretContext, row: JobRow, file: string, until: number) {
	const origin = publicOrigin(ctx.env, "Job file URLs are");
	const expiry = Math.round(until * 1000);
	const handler = await signJobFile(ctx.env.WEBHOOK_KEY, row.account, row.uuid, file, expiry);
	if (handler === undefined)
		throw new ApiError("webhooks_unconfigured", {
			description: "Job file URLs are not configured on this server (WEBHOOK_KEY)",
		});
	return { url: `${origin}/files/${row.account}/${handler}`, validity_ts: expiry / 1000 };
}

export const fileLinkOut = z.object({ url: z.string(), validity_ts: timestampOut });

// `status`: one status or a comma-separated list of them.
export function statusFilter(names: readonly string[]) {
	const status = z.enum(names as [string, ...string[]]);
	return z.pipe(
		z.pipe(
			z.string(),
			z.transform((text: string) => [...new Set(text.split(","))]),
		),
		z.array(status).check(z.minLength(1)),
	);
}

const position = z.tuple([z.number(), z.string()]);

// A page of the caller's jobs of this kind (the administrator's: every user's), newest first.
export async function listPage(
	ctx: SecretContext,
	kind: JobKind,
	query: { status?: string[]; count: number; cursor?: string },
): Promise<{ cursor: string | null; rows: JobRow[] }> {
	const user = isAdministrator(ctx.caller) ? null : ctx.caller.user;
	const statuses = query.status ?? null;
	const scope = JSON.stringify(["jobs", kind, ctx.caller.account, ctx.caller.user, statuses]);
	const after = await openCursor(ctx.env, scope, query.cursor, position);
	const limit = query.count;
	const { examined, kept } = await listJobs(
		dbOf(ctx),
		{ account: ctx.caller.account, kind, user, statuses, after, limit },
		LIST_EXTRA,
	);
	const rows = kept.slice(0, limit);
	// Where the page stopped: its last row when it filled, else the last row it examined.
	const last = kept.length > limit ? rows.at(-1) : examined.length === limit + LIST_EXTRA ? examined.at(-1) : undefined;
	const cursor = last ? await sealCursor(ctx.env, scope, [last.created_ts, last.uuid]) : null;
	return { cursor, rows };
}

// Who makes a job, as its object reads it again before every step: what the caller's credential
// rests on, a token's own expiry, and the request's DICT.
export function creatorOf(caller: Caller): JobCreator {
	const { account, user, credential, dict } = caller;
	return {
		account,
		user,
		binding: streamBinding(credential!.binding),
		exp: credential!.token?.exp ?? null,
		dict: dict ?? null,
	};
}

// The job's object, for the calls that change a job: cancel and delete. Each answers the row's
// parts it changed; what the object spent in D1 joins the request's meter, and its API error is
// thrown again here (account/outcome.ts).
export function jobObject(ctx: Context, job: string) {
	// Typed against the object's own signatures rather than the RPC stub's.
	const stub = ctx.env.BATCHES.getByName(job) as unknown as Record<
		"cancel" | "remove",
		() => Promise<Outcome<JobAnswer>>
	>;
	return {
		cancel: async () => unwrap(await stub.cancel(), ctx.meter),
		remove: async () => unwrap(await stub.remove(), ctx.meter),
	};
}

export const progressOut = z.object({
	lines: z.nullable(z.number()),
	done: z.number(),
	succeeded: z.number(),
	failed: z.number(),
});

export const stoppedOut = withMeta(z.object({ subcode: z.number(), description: z.string() }), {
	description: "The service stopped the job: the refusal its creator would now get",
});

export const userOut = uuidOut;

import type { Database } from "../db/client";
import { sibling } from "../base/shards";
import * as rows from "../db/docs";
import type { DocRow, UploadRow } from "../db/docs";
import { ApiError } from "../base/errors";
import type { Caller, Description } from "../base/caller";
import type { D1Meter } from "../db/meter";
import { findLineMark, type LineMark, markLine } from "../db/jobs";
import { timingSafeEqualText } from "../base/crypto";
import { deleteObjects, newObjectKey } from "../storage/objects";
import { now } from "../base/time";
import { type Host, RETRY_SECONDS } from "./host";
import { type DocMoves, type DocStores, made, movesOf } from "./doc-moves";

// An account's upload URLs and docs. The account's object runs these one at a time: the count
// of live uploads, the account's doc bytes and a handler's state cannot race another write of
// the same account. What is shared with other accounts (a twin's names and its doc count) is
// held by the statements that file the docs (db/docs.ts docInserts). A twin's docs live in its
// owner's database: on another account's twin there, a write is a move (doc-moves.ts).

export type DocLimits = { uploads: number; perTwin: number; bytes: number };
export type StorageClass = DocRow["storage_class"];
export type AttachInput = Record<
	string,
	{ handler: string; hash?: string; storage_class?: StorageClass; description?: Description | null }
>;

const noSuchUpload = () => new ApiError("upload_not_found", { description: "No such upload handler or URL" });

// The record the API shows of a doc. The writes add the twin as `uuid` for the object's journal;
// the response schemas leave it out.
const OCTET_STREAM = "application/octet-stream";

export function docRecord(row: DocRow) {
	return {
		creation_certificate: { size: row.size, hash: row.hash, created_ts: row.created_ts, creator: row.account },
		storage_class: row.storage_class,
		content_type: row.content_type,
		updated_ts: row.updated_ts,
		...(row.description === null ? {} : { description: row.description }),
		status: "ok" as const,
	};
}

export async function createUpload(
	db: Database,
	caller: Caller,
	upload: { handler: string; tokenHash: string; validity_ts: number },
	limits: DocLimits,
	at: number,
) {
	if ((await rows.countLiveUploads(db, caller.account, at)) >= limits.uploads) {
		throw new ApiError("upload_limit", {
			description: `The account already holds ${limits.uploads} live upload URLs, its limit (MAX_UPLOADS)`,
		});
	}
	await rows.insertUpload(db, {
		handler: upload.handler,
		account: caller.account,
		user: caller.user,
		token_hash: upload.tokenHash,
		state: "pending",
		object: null,
		size: null,
		hash: null,
		validity_ts: upload.validity_ts,
		created_ts: at,
		lease_ts: null,
		content_type: null,
	});
	return { uuid: upload.handler, handler: upload.handler, validity_ts: upload.validity_ts };
}

// Whether an upload row is one the caller may use: its own user's, and live. Any other row is
// absent to it, Server-Timing included (D1Meter.sighted): another user's or account's handler
// answers exactly as one that never existed.
const ownLive = (caller: Pick<Caller, "account" | "user">, at: number) => (row: UploadRow) =>
	row.account === caller.account && row.user === caller.user && row.validity_ts > at;

// One of the caller's own live handlers; for anyone else, and when unknown, expired or already
// attached (its row is gone then), the same 404171.
async function ownLiveUpload(
	db: Database,
	meter: D1Meter,
	caller: Caller,
	handler: string,
	at: number,
): Promise<UploadRow> {
	const row = await meter.sightedOne(() => rows.findUpload(db, handler), ownLive(caller, at));
	if (!row) throw noSuchUpload();
	return row;
}

export async function invalidateUpload(db: Database, meter: D1Meter, caller: Caller, handler: string, at: number) {
	await ownLiveUpload(db, meter, caller, handler, at);
	await rows.releaseUploads(db, caller.account, [handler], at);
	return { uuid: handler, handler };
}

// How long a PUT holds its URL without a sign of life, and how often a streaming PUT renews
// that: a PUT whose Worker died mid-stream frees the URL within UPLOAD_LEASE_SECONDS, however
// long the URL itself has left.
export const UPLOAD_LEASE_SECONDS = 120;
export const UPLOAD_RENEW_SECONDS = 30;

// The start of a PUT: the token must open this account's live handler, whose URL holds no file
// yet and no PUT in flight (one whose lease has passed is dead and released), and the file's
// length must fit the account's doc bytes. The length counts from here on.
export async function claimUpload(
	db: Database,
	meter: D1Meter,
	account: string,
	handler: string,
	tokenHash: string,
	length: number,
	limits: DocLimits,
	at: number,
) {
	const opens = (found: UploadRow) =>
		found.account === account && timingSafeEqualText(found.token_hash, tokenHash) && found.validity_ts > at;
	const row = await meter.sightedOne(() => rows.findUpload(db, handler), opens);
	if (!row) throw noSuchUpload();
	if (row.state === "uploaded") throw new ApiError("upload_used");
	const dead = row.state === "receiving" && row.lease_ts !== null && row.lease_ts <= at;
	if (row.state === "receiving" && !dead) {
		throw new ApiError("upload_in_progress", {
			description: "An upload to this URL is in progress: retry later, it goes on undisturbed",
			headers: { "retry-after": "5" },
		});
	}
	// A dead PUT's length still counts until the claim releases it.
	const used = ((await rows.docBytes(db, account))?.bytes ?? 0) - (dead ? (row.size ?? 0) : 0);
	if (used + length > limits.bytes) {
		throw new ApiError("doc_bytes_limit", {
			description: `The account's docs and uploads would exceed ${limits.bytes} bytes, its limit (MAX_DOC_BYTES)`,
		});
	}
	const object = newObjectKey();
	const lease_ts = at + UPLOAD_LEASE_SECONDS;
	if (!(await rows.claimUpload(db, row, object, length, at, lease_ts))) throw new ApiError("upload_in_progress");
	return { object, lease_ts };
}

// A sign of life of the PUT of `object`: false once it no longer holds the URL.
export function renewUpload(db: Database, handler: string, object: string, at: number) {
	return rows.renewUpload(db, handler, object, at + UPLOAD_LEASE_SECONDS);
}

// The end of a PUT whose bytes are all in R2. When the URL was invalidated or expired while the
// bytes streamed, its row is gone: the object it made is deleted here, and the PUT is 404171.
export async function finishUpload(
	db: Database,
	bucket: R2Bucket,
	handler: string,
	object: string,
	hash: string,
	contentType: string,
) {
	const row = await rows.finishUpload(db, handler, object, hash, contentType);
	if (!row) {
		await deleteObjects(bucket, [object]).catch(() => undefined);
		throw noSuchUpload();
	}
	return { handler, size: row.size!, hash };
}

export function reopenUpload(db: Database, account: string, handler: string, object: string) {
	return rows.reopenUpload(db, account, handler, object);
}

// All or nothing, in the order the caller meets the refusals: handlers (own and live, then
// uploaded), hashes, names, the twin's count, the account's bytes.
export async function attachDocs(
	stores: DocStores,
	moves: DocMoves,
	meter: D1Meter,
	caller: Caller,
	twin: string,
	input: AttachInput,
	limits: DocLimits,
	at: number,
) {
	const db = stores.home;
	const names = Object.keys(input);
	const handlers = names.map((name) => input[name].handler);
	const found = new Map(
		(await meter.sighted(() => rows.findUploads(db, handlers), ownLive(caller, at))).map((row) => [row.handler, row]),
	);
	const uploads = names.map((name) => found.get(input[name].handler));
	if (uploads.some((row) => !row)) throw noSuchUpload();
	const waiting = names.filter((_, i) => uploads[i]!.state !== "uploaded");
	if (waiting.length)
		throw new ApiError("upload_empty", {
			description: `The upload URL of ${waiting.join(", ")} has received no file yet`,
		});
	const wrong = names.filter(
		(name, i) => input[name].hash !== undefined && input[name].hash!.toLowerCase() !== uploads[i]!.hash,
	);
	if (wrong.length) {
		const details = wrong.map((name) => ({
			path: `docs.${name}.hash`,
			message: "Differs from the SHA-256 of the uploaded file",
		}));
		throw new ApiError("hash_mismatch", {
			description: `The hash of ${wrong.join(", ")} differs from the upload's SHA-256; nothing was attached`,
			details,
		});
	}
	const taken = await rows.takenNames(stores.twin, twin, names);
	if (taken.length) throw nameTaken(taken);
	if ((await rows.countTwinDocs(stores.twin, twin, caller.account)) + names.length > limits.perTwin)
		throw twinFull(limits.perTwin);
	const used = (await rows.docBytes(db, caller.account))?.bytes ?? 0;
	if (used > limits.bytes) {
		throw new ApiError("doc_bytes_limit", {
			description: `The account's docs and uploads exceed ${limits.bytes} bytes, its limit (MAX_DOC_BYTES)`,
		});
	}
	// A doc's uuid names the database its row lives in, its twin's: a download URL, which names
	// the doc only, finds it there.
	const docs: DocRow[] = names.map((name, i) => ({
		uuid: sibling(twin),
		twin,
		name,
		account: caller.account,
		object: uploads[i]!.object!,
		size: uploads[i]!.size!,
		hash: uploads[i]!.hash!,
		storage_class: input[name].storage_class ?? "access_optimized",
		description: input[name].description ?? null,
		created_ts: at,
		updated_ts: at,
		content_type: uploads[i]!.content_type ?? OCTET_STREAM,
	}));
	const race = stores.apart
		? await made(
				stores,
				moves,
				caller.account,
				twin,
				{ kind: "attach", docs, uploads: uploads as UploadRow[], perTwin: limits.perTwin },
				at,
			)
		: await rows.attachDocs(db, docs, handlers, limits.perTwin);
	if (race === "name_taken") throw nameTaken(names);
	if (race === "twin_full") throw twinFull(limits.perTwin);
	return { uuid: twin, docs: Object.fromEntries(docs.map((doc) => [doc.name, docRecord(doc)])) };
}

function nameTaken(names: string[]) {
	const details = names.map((name) => ({ path: `docs.${name}`, message: "The twin already has a doc of this name" }));
	return new ApiError("conflict", { description: `The twin already has a doc named ${names.join(" or ")}`, details });
}

function twinFull(limit: number) {
	return new ApiError("twin_doc_limit", {
		description: `A twin holds at most ${limit} docs of each account (MAX_TWIN_DOCS)`,
	});
}

// A doc of the twin the caller may change: its own account's. Another account's doc is visible
// to whoever sees the twin, so it is 403, not 404.
async function ownDoc(db: Database, caller: Caller, twin: string, name: string): Promise<DocRow> {
	const row = await rows.findDoc(db, twin, name);
	if (!row) throw new ApiError("not_found", { description: "No such doc" });
	if (row.account !== caller.account)
		throw new ApiError("not_owner", { description: "Only the account that attached a doc may change or delete it" });
	return row;
}

// `mark`: a batch line's, which commits in the account's database (the job's): with the change
// when the twin's docs are there too, else on its own right after it (db/jobs.ts markLine), and
// alone when nothing changes, so that the line counts as run either way.
export async function updateDoc(
	stores: DocStores,
	caller: Caller,
	twin: string,
	name: string,
	description: Description | null | undefined,
	at: number,
	mark?: LineMark,
) {
	// The doc's row is the one row the write changes, in the twin's database.
	const row = await ownDoc(stores.twin, caller, twin, name);
	// Apart, a line run again would write before it meets its mark: it looks first, and fails as
	// a write that met it does.
	if (mark && stores.apart && (await findLineMark(stores.home, mark.job, mark.line)))
		throw new Error("The batch line has run already");
	const updated =
		description === undefined
			? row
			: await rows.setDocDescription(stores.twin, row.uuid, description, at, stores.apart ? undefined : mark);
	if (!updated) throw new ApiError("not_found", { description: "No such doc" });
	if (mark && (description === undefined || stores.apart)) await markLine(stores.home, mark, at);
	return { uuid: twin, ...docRecord(updated) };
}

// The account's docs on a twin deleted, their objects to doc_garbage and their sizes given back.
// Apart, the docs go first, then the objects and bytes: an object is never deleted from R2
// while a doc still refers to it.
// A batch line's mark commits with the deletion, or apart with the move that makes it.
async function removeOwn(
	stores: DocStores,
	moves: DocMoves,
	account: string,
	twin: string,
	own: DocRow[],
	at: number,
	mark?: LineMark,
) {
	if (!stores.apart)
		return rows.removeDocs(
			stores.home,
			account,
			twin,
			own.map((row) => row.uuid),
			at,
			mark,
		);
	const docs = own.map(({ uuid, object, size }) => ({ uuid, object, size }));
	await made(stores, moves, account, twin, { kind: "remove", docs }, at, mark);
	return own;
}

export async function deleteDoc(
	stores: DocStores,
	moves: DocMoves,
	caller: Caller,
	twin: string,
	name: string,
	at: number,
	mark?: LineMark,
) {
	const row = await ownDoc(stores.twin, caller, twin, name);
	await removeOwn(stores, moves, caller.account, twin, [row], at, mark);
	return { uuid: twin, ...docRecord(row) };
}

// The twin's docs attached by the caller's account; other accounts' stay.
export async function deleteDocs(stores: DocStores, moves: DocMoves, caller: Caller, twin: string, at: number) {
	const own = await rows.listAccountDocs(stores.twin, twin, caller.account);
	const removed = own.length ? await removeOwn(stores, moves, caller.account, twin, own, at) : [];
	return {
		uuid: twin,
		docs: removed.map((row) => ({
			name: row.name,
			created_ts: row.created_ts,
			updated_ts: row.updated_ts,
			size: row.size,
		})),
	};
}

// Background work of the account's object: dead PUTs' URLs are pending again, expired uploads
// are released, and the objects nobody refers to are deleted from R2, then forgotten. Answers
// when it must run again: the next upload's expiry or lease, or sooner when more is left than
// one round takes or R2 failed.
export async function tidyDocs(
	db: Database,
	bucket: R2Bucket,
	account: string,
	at: number,
): Promise<number | undefined> {
	const ROUND = 100;
	await rows.releaseDeadPuts(db, account, at);
	const expired = await rows.expiredUploads(db, account, at, ROUND);
	if (expired.length)
		await rows.releaseUploads(
			db,
			account,
			expired.map((row) => row.handler),
			at,
		);
	const garbage = (await rows.garbageOf(db, account, ROUND)).map((row) => row.object);
	// More than one round's work left: again in a second; R2 failing: again in a minute.
	let soon = expired.length === ROUND || garbage.length === ROUND ? at + 1 : undefined;
	if (garbage.length) {
		try {
			await deleteObjects(bucket, garbage);
			await rows.forgetGarbage(db, garbage);
		} catch (error) {
			console.error(JSON.stringify({ docGarbage: account, error: String(error) }));
			soon = at + 60;
		}
	}
	const next = await rows.nextUploadExpiry(db, account);
	const due = [next, soon].filter((t): t is number => t !== undefined);
	return due.length ? Math.min(...due) : undefined;
}

// The docs timer's step: moves a write left unfinished finished (or undone), expired uploads
// released, dead PUTs' leases ended, unreferenced objects deleted from R2, serialized with the
// writes (it changes uploads and the account's doc bytes); due again at the next expiry or
// lease, or in a minute while a move cannot be finished.
export async function tidyStep(host: Host, account: string): Promise<number | undefined> {
	const outcome = await host.serialized(async (db) => {
		let retry: number | undefined;
		try {
			await movesOf(host).settle(account);
		} catch (error) {
			console.error(JSON.stringify({ docMoves: account, error: String(error) }));
			retry = now() + RETRY_SECONDS;
		}
		const next = await tidyDocs(db, host.env.DOCS, account, now());
		return next === undefined || retry === undefined ? (next ?? retry) : Math.min(next, retry);
	});
	return outcome.ok ? outcome.value : now() + RETRY_SECONDS;
}

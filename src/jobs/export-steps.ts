import type { Caller } from "../base/caller";
import { now } from "../base/time";
import { cutPage, planPage } from "../account/scan";
import { storedOf } from "../account/ledger-view";
import { database } from "../db/client";
import { indexRowSizes, madeTwins, readExportPage, twinSizes } from "../db/exports";
import type { IdentityRow } from "../db/identities";
import { listIndexTables } from "../db/indexes";
import type { EntryRow } from "../db/ledgers";
import { everyShard, homeDatabase, shardDatabase } from "../db/shards";
import type { PageRow } from "../db/twins";
import { rowProperties, visibleRowPage } from "../operations/indexes";
import { checkIndexAccess } from "../policy/indexes";
import type { Json } from "../rules/ast";
import { EntrySight } from "../rules/entries";
import { canSeeIdentity } from "../rules/identities";
import { Budget, WORK_UNITS } from "../rules/strings";
import { creatorOrStop } from "./creator";
import { entryLine, gzipMember, identityLine, indexLine, twinLine, wholeParts } from "./export-lines";
import { type JobFile, jobFileKey } from "./files";
import { concatBytes, type ExportFile, type ExportState, type StepRuntime } from "./store";

// An export's stages (docs/batches.md, "Exports"): `new` counts the account's twins; `processing`
// walks them in uuid order, a bounded page a step, writing what the creator now sees of each to
// the files, then the rows of the account's Indexes tables; `writing_results` ends each file;
// then `completed`. A cancel, or a creator that no longer may, ends it `cancelled` with no file.
// Each step answers when the next is due (seconds), or undefined when the export has ended.

// What a step reads at most: this many twins (or index rows), or about this many bytes of them,
// whichever comes first (always one).
const TWINS_PER_STEP = 200;
const INDEX_ROWS_PER_STEP = 1000;
const STEP_BYTES = 2 * 1024 * 1024;
// A file's multipart parts: R2's minimum, and every part but the last of one size.
const PART_BYTES = 5 * 1024 * 1024;
// What an index row's line adds to its stored properties: the table, the twin, the keys.
const INDEX_ROW_OVERHEAD = 200;

const GZIP = { httpMetadata: { contentType: "application/gzip" } };

type Content = "twins" | "identities" | "ledgers" | "indexes";

const contentsOf = (state: ExportState) => state.spec.details.contents as Content[];

export async function exportStep(rt: StepRuntime, state: ExportState): Promise<number | undefined> {
	switch (state.status) {
		case "new":
			return beginStep(rt, state);
		case "processing":
			return processStep(rt, state);
		case "writing_results":
			return writeStep(rt, state);
		case "cancel":
			state.status = "cancelling";
			return now();
		case "cancelling":
			return cancelStep(rt, state);
		default:
			return undefined;
	}
}

// The creator as it now is, and still allowed the export's contents: a role that has since got
// an entry rule may not read index rows (403102), and the export stops as it would be refused.
function creator(rt: StepRuntime, state: ExportState): Promise<Caller | undefined> {
	const indexes = contentsOf(state).includes("indexes");
	return creatorOrStop(rt.env, state, (caller) => {
		if (indexes) checkIndexAccess(caller, "read");
	});
}

const emptyFile = (): ExportFile => ({ uploadId: null, parts: [], lines: 0, bytes: 0, pending: 0, written: false });

// The account's twins as the export begins: every one, hidden or not, as `progress.twins`.
async function beginStep(rt: StepRuntime, state: ExportState): Promise<number | undefined> {
	if (state.cancelAsked) return cancelling(state);
	if ((await creator(rt, state)) === undefined) return now();
	const { account } = state.spec.creator;
	const contents = contentsOf(state);
	state.progress.twins = await madeTwins(database(homeDatabase(rt.env, account)), account);
	state.after = "";
	// Without a file of twins, identities or ledgers, nothing needs the twins walked.
	const walksTwins = contents.some((content) => content !== "indexes");
	state.exporting = {
		table: walksTwins ? null : { name: "", after: "", finished: false },
		files: Object.fromEntries(contents.map((content) => [content, emptyFile()])),
	};
	state.status = "processing";
	return now();
}

async function processStep(rt: StepRuntime, state: ExportState): Promise<number | undefined> {
	if (state.cancelAsked) return cancelling(state);
	const caller = await creator(rt, state);
	if (caller === undefined) return now();
	if (state.exporting!.table === null) await twinsStep(rt, state, caller);
	else await indexesStep(rt, state, caller);
	return now();
}

// How many of the next items, by their sizes, a step takes: up to STEP_BYTES, at least one.
// When it takes all that were left, it asks for a whole page, so that the page shows the end.
function takeBySize(sizes: number[], page: number): number {
	let taken = 0;
	let bytes = 0;
	for (const size of sizes) {
		if (taken > 0 && bytes + size > STEP_BYTES) break;
		bytes += size;
		taken++;
	}
	return taken === sizes.length && sizes.length < page ? page : taken;
}

// The next twins of the account: those the creator sees and `match` passes, each with the
// identities and entries of the account on it that the creator's rules show.
async function twinsStep(rt: StepRuntime, state: ExportState, caller: Caller) {
	const { account } = state.spec.creator;
	const contents = contentsOf(state);
	const parts = { identities: contents.includes("identities"), ledgers: contents.includes("ledgers") };
	const d1 = homeDatabase(rt.env, account);
	const sizes = await twinSizes(d1, { owner: account, after: state.after, count: TWINS_PER_STEP }, parts);
	if (sizes.length === 0) return endTwins(rt, state, new Map());
	const at = now();
	const match = state.spec.details.match as string | null;
	const request = {
		count: takeBySize(
			sizes.map((twin) => twin.bytes),
			TWINS_PER_STEP,
		),
		details: true,
	};
	const scan = match === null ? request : { ...request, match };
	const plan = planPage(caller, state.after, scan, at);
	const read = await readExportPage(d1, plan.query, parts);
	const page = cutPage(read.twins, plan, caller, scan, at);
	const identities = byTwin(read.identities);
	const entries = byTwin(read.entries);
	const lines: Record<string, string[]> = { twins: [], identities: [], ledgers: [] };
	for (const row of page.shown) {
		const twin = twinOf(row);
		if (contents.includes("twins")) lines.twins!.push(twinLine(row));
		// Every rule about one twin's identities shares one budget, as get_twin_identities does.
		const budget = new Budget(WORK_UNITS);
		for (const identity of identities.get(row.uuid) ?? [])
			if (canSeeIdentity(caller, identity, twin, at, budget)) lines.identities!.push(identityLine(identity));
		const ledger = (entries.get(row.uuid) ?? []).map(storedOf);
		if (ledger.length) {
			// As get_twin_ledger_entry decides on the account's own ledger, from the whole of it.
			const sight = new EntrySight(caller, twin, account, new Map(ledger.map((entry) => [entry.name, entry])), at);
			for (const entry of ledger) if (sight.shows(entry)) lines.ledgers!.push(entryLine(row.uuid, account, entry));
		}
	}
	const written = new Map(contents.filter((c) => c !== "indexes").map((c) => [c, lines[c]!]));
	const advance = () => {
		state.progress.scanned += page.taken;
		state.progress.exported += page.shown.length;
		if (page.last) state.after = page.last;
	};
	if (!page.done) return append(rt, state, written, advance);
	return endTwins(rt, state, written, advance);
}

// The twins are all read: on to the Indexes tables, or to ending the files.
function endTwins(rt: StepRuntime, state: ExportState, written: Map<string, string[]>, advance = () => {}) {
	const indexes = contentsOf(state).includes("indexes");
	return append(rt, state, written, () => {
		advance();
		if (indexes) state.exporting!.table = { name: "", after: "", finished: false };
		else state.status = "writing_results";
	});
}

function twinOf(row: PageRow) {
	return {
		uuid: row.uuid,
		owner: row.owner ?? "",
		status: row.status ?? "",
		description: JSON.parse(row.description ?? "{}") as Json,
	};
}

function byTwin<T extends IdentityRow | EntryRow>(rows: T[]): Map<string, T[]> {
	const grouped = new Map<string, T[]>();
	for (const row of rows) {
		const list = grouped.get(row.twin);
		if (list) list.push(row);
		else grouped.set(row.twin, [row]);
	}
	return grouped;
}

// The next rows of the account's Indexes tables, by table name then twin: every row of the
// table's current generation, or, for a creator with a twin rule, those of twins it sees (as
// query_indexes_table answers them).
async function indexesStep(rt: StepRuntime, state: ExportState, caller: Caller) {
	const { account } = state.spec.creator;
	const d1 = homeDatabase(rt.env, account);
	const db = database(d1);
	const at = state.exporting!.table!;
	const tables = await listIndexTables(db, account);
	const table = tables.find((t) => (at.finished ? t.name > at.name : t.name >= at.name));
	if (table === undefined)
		return append(rt, state, new Map(), () => {
			state.status = "writing_results";
		});
	const after = table.name === at.name && !at.finished ? at.after : "";
	const key = { table: table.uuid, generation: table.generation };
	const sizes = await indexRowSizes(d1, key, after, INDEX_ROWS_PER_STEP);
	const count = takeBySize(
		sizes.map((size) => size + INDEX_ROW_OVERHEAD),
		INDEX_ROWS_PER_STEP,
	);
	const reader = {
		caller,
		env: rt.env,
		db,
		bindings: everyShard(rt.env),
		shard: (binding: string) => database(shardDatabase(rt.env, binding)),
	};
	const rows = sizes.length === 0 ? [] : await visibleRowPage(reader, key, after, count);
	const names = table.properties.names;
	const lines = rows.flatMap((row) =>
		row.properties === null
			? []
			: [indexLine(table.name, row.twin, rowProperties(names, row.properties), row.updated_ts)],
	);
	return append(rt, state, new Map([["indexes", lines]]), () => {
		state.exporting!.table = {
			name: table.name,
			after: rows.at(-1)?.twin ?? after,
			finished: rows.length < count,
		};
	});
}

// A step's lines added to their files, each as one gzip member, then `advance` (the walk's
// cursor and counts) and the files' state saved together. The bytes of a file that reach a whole
// part go to its upload first; the rest wait in the object's storage for the next step. A step
// cut short before the save is run again from the same cursor: its parts are sent again under
// the same numbers, which replaces them.
async function append(rt: StepRuntime, state: ExportState, written: Map<string, string[]>, advance: () => void) {
	const files = state.exporting!.files;
	const members = new Map<string, { lines: number; bytes: Uint8Array }>();
	for (const [file, lines] of written)
		if (lines.length) members.set(file, { lines: lines.length, bytes: await gzipMember(lines) });
	const full = [...members].filter(([file, member]) => files[file]!.pending + member.bytes.length >= PART_BYTES);
	// Uploads are begun, and kept, before any part goes: a part is never sent to an upload the
	// state does not name (which nothing would abort).
	let begun = false;
	for (const [file] of full) {
		if (files[file]!.uploadId !== null) continue;
		const upload = await rt.env.DOCS.createMultipartUpload(fileKey(state, file), GZIP);
		files[file]!.uploadId = upload.uploadId;
		begun = true;
	}
	if (begun) rt.save();
	const sent = new Map<string, { parts: R2UploadedPart[]; rest: Uint8Array }>();
	for (const [file, member] of full) {
		const target = files[file]!;
		const { parts, rest } = wholeParts(concatBytes([rt.store.pending(file), member.bytes]), PART_BYTES);
		const upload = rt.env.DOCS.resumeMultipartUpload(fileKey(state, file), target.uploadId!);
		const uploaded: R2UploadedPart[] = [];
		for (const part of parts) uploaded.push(await upload.uploadPart(target.parts.length + uploaded.length + 1, part));
		sent.set(file, { parts: uploaded, rest });
	}
	rt.ctx.storage.transactionSync(() => {
		for (const [file, member] of members) {
			const target = files[file]!;
			const done = sent.get(file);
			if (done) {
				rt.store.replacePending(file, done.rest);
				target.parts.push(...done.parts);
				target.pending = done.rest.length;
			} else {
				rt.store.appendPending(file, member.bytes);
				target.pending += member.bytes.length;
			}
			target.lines += member.lines;
			target.bytes += member.bytes.length;
		}
		advance();
		rt.save();
	});
}

const fileKey = (state: ExportState, file: string) => jobFileKey(state.spec.uuid, file as JobFile);

// One file ended a step: its pending bytes as its last part and its upload completed, or, for a
// file that never filled a part, put whole (an empty file as an empty gzip member, so that every
// file is gzip). Once all are, the export has completed and its record names them.
async function writeStep(rt: StepRuntime, state: ExportState): Promise<number | undefined> {
	if (state.cancelAsked) return cancelling(state);
	if ((await creator(rt, state)) === undefined) return now();
	const files = state.exporting!.files;
	const next = Object.entries(files).find(([, file]) => !file.written);
	if (next) {
		const [name, file] = next;
		const key = fileKey(state, name);
		let last = rt.store.pending(name);
		if (file.uploadId === null) {
			if (file.bytes === 0) last = await gzipMember([]);
			await rt.env.DOCS.put(key, last, GZIP);
		} else await completeUpload(rt.env.DOCS, key, file, last);
		rt.ctx.storage.transactionSync(() => {
			if (file.bytes === 0) file.bytes = last.length;
			file.pending = 0;
			file.written = true;
			rt.store.replacePending(name, new Uint8Array());
			rt.save();
		});
		return now();
	}
	state.extra = {
		files: Object.fromEntries(
			Object.entries(files).map(([name, file]) => [name, { lines: file.lines, bytes: file.bytes }]),
		),
	};
	state.status = "completed";
	state.expires_ts = now() + Number(rt.env.BATCH_RETENTION_SECONDS);
	return state.expires_ts;
}

// The last part and the upload's completion. Completed already (by a step whose end was lost)
// when the object is there at the file's size.
async function completeUpload(bucket: R2Bucket, key: string, file: ExportFile, last: Uint8Array) {
	const upload = bucket.resumeMultipartUpload(key, file.uploadId!);
	try {
		const parts = [...file.parts];
		if (last.length) parts.push(await upload.uploadPart(parts.length + 1, last));
		await upload.complete(parts);
	} catch (error) {
		const head = await bucket.head(key);
		if (head?.size !== file.bytes) throw error;
	}
}

// A cancelled or stopped export keeps no file: its unfinished uploads are aborted, its files and
// pending bytes deleted.
async function cancelStep(rt: StepRuntime, state: ExportState): Promise<number | undefined> {
	const files = state.exporting?.files ?? {};
	for (const [name, file] of Object.entries(files)) {
		if (file.uploadId === null || file.written) continue;
		await rt.env.DOCS.resumeMultipartUpload(fileKey(state, name), file.uploadId).abort();
		file.uploadId = null;
		rt.save();
	}
	await rt.env.DOCS.delete(contentsOf(state).map((content) => fileKey(state, content)));
	rt.store.dropPending();
	state.extra = {};
	state.status = "cancelled";
	state.expires_ts = now() + Number(rt.env.BATCH_RETENTION_SECONDS);
	return state.expires_ts;
}

function cancelling(state: ExportState): number {
	state.status = "cancelling";
	return now();
}

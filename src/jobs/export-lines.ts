import type { IdentityRow } from "../db/identities";
import type { PageRow } from "../db/twins";
import type { StoredEntry } from "../account/ledger-view";
import type { Json } from "../rules/ast";

// The lines of an export's files (docs/batches.md, "Exports"): one flat JSON object a line, its
// keys in a fixed order, each file a run of gzip members (RFC 1952) that any gzip reader reads as
// one stream. Pure: the export's steps read the rows and write the bytes.

// twins.ndjson.gz: the twin as get_twin shows it. The JSON columns are spliced as stored: only
// this service writes them, always with JSON.stringify.
export function twinLine(row: PageRow): string {
	const text = JSON.stringify;
	return (
		`{"uuid":${text(row.uuid)},"owner":${text(row.owner)},"status":${text(row.status)},` +
		`"description":${row.description ?? "{}"},"creation_certificate":${row.creation_certificate ?? "{}"},` +
		`"termination_certificate":${row.termination_certificate ?? "null"},"updated_ts":${text(row.updated_ts)}}\n`
	);
}

// identities.ndjson.gz: one of the account's identities on the twin.
export function identityLine(row: IdentityRow): string {
	const { twin, identity, validity_ts, visibility, created_ts, updated_ts } = row;
	return `${JSON.stringify({ twin, identity, validity_ts, visibility, created_ts, updated_ts })}\n`;
}

// ledgers.ndjson.gz: an entry of the ledger `ledger` (the account's uuid, as a path names it) on
// the twin, its value as JSON.
export function entryLine(twin: string, ledger: string, entry: StoredEntry): string {
	const { name, visibility, history, publish, entry_created_ts, entry_updated_ts, value_changed_ts } = entry;
	return (
		`{"twin":${JSON.stringify(twin)},"ledger":${JSON.stringify(ledger)},"entry":${JSON.stringify(name)},` +
		`"value":${entry.text},` +
		`${JSON.stringify({ visibility, history, publish, entry_created_ts, entry_updated_ts, value_changed_ts }).slice(1)}\n`
	);
}

// indexes.ndjson.gz: a row of the table named `table`.
export function indexLine(table: string, twin: string, properties: Record<string, Json>, updated_ts: number): string {
	return `${JSON.stringify({ table, twin, properties, updated_ts })}\n`;
}

// One gzip member holding `lines` (UTF-8).
export async function gzipMember(lines: string[]): Promise<Uint8Array> {
	const stream = new Blob(lines).stream().pipeThrough(new CompressionStream("gzip"));
	return new Uint8Array(await new Response(stream).arrayBuffer());
}

// `bytes` cut into whole parts of `size` and what is left after them.
export function wholeParts(bytes: Uint8Array, size: number): { parts: Uint8Array[]; rest: Uint8Array } {
	const parts: Uint8Array[] = [];
	let at = 0;
	for (; bytes.length - at >= size; at += size) parts.push(bytes.subarray(at, at + size));
	return { parts, rest: bytes.subarray(at) };
}

import * as z from "zod/mini";
import { MAX_LEDGER_BYTES, MAX_TOPICS } from "../account/ledger-writes";
import { cursorIn, cursorOut } from "./paging";
import { commaList, jsonValue, mapOf, queryTimestamp, ruleText, timestampOut, TOPIC, uuid } from "./schemas";

// Request and answer shapes of the ledger operations.

export const ENTRY_NAME = /^[a-z_][0-9a-z_]{0,127}$/;
const MAX_ENTRIES = 100;
// Each entry takes at least 6 bytes of its ledger (`"a":0,`), whose limit bounds how many there are.
export const MAX_LEDGER_ENTRIES = Math.floor(MAX_LEDGER_BYTES / 6);

const entryName = z.string().check(z.regex(ENTRY_NAME, "Must match ^[a-z_][0-9a-z_]{0,127}$"));

export const ledgerParams = z.strictObject({
	twin: uuid,
	ledger: z.union(
		[z.enum(["personal", "owner", "creator"]), uuid],
		"Must be personal, owner, creator or an account uuid",
	),
});

// The pattern allows "__proto__", but answers are objects keyed by entry name, built by
// assignment, where that key would be dropped: it is refused here as in a body (http/body.ts).
const listedName = entryName.check(z.refine((name) => name !== "__proto__", '"__proto__" is a reserved key'));

// A comma-separated list of entry names, at most 100, repeats dropped.
export const entryList = commaList(listedName, MAX_ENTRIES, "names");

const history = z
	.string()
	.check(z.regex(/^([1-9][0-9]{0,2}[DWMY]|INF)$/, "Must be 1 to 999 followed by D, W, M or Y, or INF"));
const topicKey = z.string().check(z.regex(TOPIC, "Topics must match ^[0-9A-Za-z-]{3,48}$"));
const publish = z
	.record(topicKey, ruleText)
	.check(z.refine((topics) => Object.keys(topics).length <= MAX_TOPICS, `At most ${MAX_TOPICS} topics`));
// In a merge patch a null topic is removed; the topics are counted once merged.
const publishPatch = z.record(topicKey, z.nullable(ruleText));

// The Timeseries tables an entry feeds, with its templates for each (docs/timeseries.md, "Feeding a
// table"). The shape is checked here; the account's object checks the tables exist, the
// dimensions are theirs and the templates parse, when the write runs.
const MAX_ENTRY_TABLES = 10;
const tableTemplates = z.strictObject({
	measurement: z.optional(z.string()),
	dimensions: z.optional(mapOf(z.string(), 8)),
	timestamp: z.optional(z.string()),
});
const timeseries = z
	.record(z.string(), tableTemplates)
	.check(
		z.refine(
			(tables) => Object.keys(tables).length >= 1 && Object.keys(tables).length <= MAX_ENTRY_TABLES,
			`From 1 to ${MAX_ENTRY_TABLES} tables`,
		),
	);

// Entry types other than a plain value, and transactions, are not supported here.
const unsupported = z.optional(z.unknown()).check(z.refine((value) => value === undefined, "not supported"));
const transaction = z
	.optional(z.unknown())
	.check(z.refine((value) => value === undefined || value === null, "not supported"));

const properties = {
	visibility: z.optional(z.nullable(ruleText)),
	history: z.optional(z.nullable(history)),
	publish: z.optional(z.nullable(publish)),
	ref: unsupported,
	include: unsupported,
	timeseries: z.optional(z.nullable(timeseries)),
};

const entriesOf = <T extends z.ZodMiniType>(entry: T) =>
	z.record(entryName, entry).check(
		z.refine((entries) => {
			const count = Object.keys(entries).length;
			return count >= 1 && count <= MAX_ENTRIES;
		}, `From 1 to ${MAX_ENTRIES} entries`),
	);

const conditions = z.optional(
	z
		.record(entryName, ruleText)
		.check(z.refine((c) => Object.keys(c).length <= MAX_ENTRIES, `At most ${MAX_ENTRIES} conditions`)),
);

export const addBody = z.strictObject({
	entries: entriesOf(z.strictObject({ value: jsonValue, ...properties })),
	conditions,
	transaction,
});

export const updateBody = z.strictObject({
	entries: entriesOf(z.strictObject({ value: z.optional(jsonValue), ...properties })),
	conditions,
	transaction,
});

// A merge patch of entries (RFC 7396): `value` merges into the stored value and `publish` by
// topic. An entry itself may not be null: deleting one is delete_twin_ledger_entry's.
export const mergeBody = z.strictObject({
	entries: entriesOf(
		z.strictObject({ value: z.optional(jsonValue), ...properties, publish: z.optional(z.nullable(publishPatch)) }),
	),
	conditions,
	transaction,
});

export const updateValueBody = z.strictObject({
	entries: entriesOf(z.strictObject({ value: jsonValue })),
	conditions,
	transaction,
});

export const deleteBody = z.strictObject({ conditions, transaction });

// Answers. The owning account's users see the configuration; other accounts the value.
const times = { entry_created_ts: timestampOut, entry_updated_ts: timestampOut, value_changed_ts: timestampOut };
export const valueEntry = z.object({ value: jsonValue, ...times });
export const ownEntry = z.object({
	value: jsonValue,
	visibility: z.nullable(z.string()),
	history: z.optional(z.string()),
	publish: z.optional(mapOf(z.string(), MAX_TOPICS)),
	timeseries: z.optional(mapOf(tableTemplates, MAX_ENTRY_TABLES)),
	...times,
});
export const ownEntries = z.object({ entries: mapOf(ownEntry, MAX_LEDGER_ENTRIES) });
export const readEntries = z.object({ entries: mapOf(z.union([ownEntry, valueEntry]), MAX_LEDGER_ENTRIES) });
export const valueEntries = z.object({ entries: mapOf(valueEntry, MAX_LEDGER_ENTRIES) });

export const NOT_ACCESSIBLE = "Entry not accessible.";
export const historyEntries = z.object({
	// The ledger's entries that keep history, and the names asked for that it cannot answer;
	// up to `limit` (100) records each.
	entries: mapOf(z.union([mapOf(jsonValue, 100), z.literal(NOT_ACCESSIBLE)]), MAX_LEDGER_ENTRIES + MAX_ENTRIES),
	cursor: cursorOut,
});

export const historyQuery = z
	.strictObject({
		entries: z.optional(entryList),
		ge: z.optional(queryTimestamp),
		le: z.optional(queryTimestamp),
		limit: z._default(
			z.optional(
				z.pipe(
					z.pipe(z.string().check(z.regex(/^\d{1,3}$/, "Must be an integer from 1 to 100")), z.transform(Number)),
					z
						.number()
						.check(
							z.int(),
							z.gte(1, "Must be an integer from 1 to 100"),
							z.lte(100, "Must be an integer from 1 to 100"),
						),
				),
			),
			100,
		),
		cursor: z.optional(cursorIn),
	})
	.check(
		z.refine((q) => q.ge === undefined || q.le === undefined || q.ge <= q.le, {
			message: "ge must not be after le",
			path: ["ge"],
		}),
	);

import type { EntryRow } from "../db/ledgers";
import type { EntryTimeseries } from "../db/schema";
import type { Json } from "../rules/ast";
import type { Entry } from "../rules/entries";

// An entry as stored, with its value parsed once and its JSON text kept for writing back.
export type StoredEntry = Entry & {
	text: string;
	size: number;
	history: string | null;
	publish: Record<string, string> | null;
	timeseries: EntryTimeseries | null;
};

export function storedOf(row: EntryRow): StoredEntry {
	const { name, value, size, visibility, history, publish, timeseries } = row;
	const { entry_created_ts, entry_updated_ts, value_changed_ts } = row;
	return {
		name,
		value: JSON.parse(value) as Json,
		text: value,
		size,
		visibility,
		history,
		publish,
		timeseries,
		entry_created_ts,
		entry_updated_ts,
		value_changed_ts,
	};
}

// What the owning account's users see: the configuration too. history, publish and
// timeseries only when set.
export function entryOut(entry: StoredEntry) {
	return {
		value: entry.value,
		visibility: entry.visibility,
		...(entry.history === null ? {} : { history: entry.history }),
		...(entry.publish === null ? {} : { publish: entry.publish }),
		...(entry.timeseries === null ? {} : { timeseries: entry.timeseries }),
		entry_created_ts: entry.entry_created_ts,
		entry_updated_ts: entry.entry_updated_ts,
		value_changed_ts: entry.value_changed_ts,
	};
}

// What other accounts' users see, and what the value route answers to anyone.
export function valueOut(entry: Entry) {
	return {
		value: entry.value,
		entry_created_ts: entry.entry_created_ts,
		entry_updated_ts: entry.entry_updated_ts,
		value_changed_ts: entry.value_changed_ts,
	};
}

import type { Json } from "./ast";
import { type Canonical, coerce } from "./index-values";
import type { Budget } from "./strings";
import type { MeasurementTypeName, TimeseriesTemplates } from "./timeseries-definition";
import { parseTemplate, renderTemplate, type Template, type TemplateInput } from "./templates";

// The point one entry's write makes in one Timeseries table (docs/timeseries.md "Feeding a
// table"), computed in the write step on the ledger as written. Each template is the entry's,
// else the table's default, else the built-in one; a value that does not fit its type is null
// and the point stays, but a point without a declared measurement or a timestamp in the
// table's window is dropped, as the contract says, rather than stored where no query finds it.

// How far ahead of the commit a point's timestamp may be: a clock a little fast is not a mistake.
export const FUTURE_SECONDS = 300;

// A point as timeseries/types.ts `Point` has it, but for `seq`, which the writer assigns.
export type PointFields = {
	entry: string;
	ts: number;
	twin: string;
	dims: Json[];
	measurement: string;
	value: Json;
};

export type PointTable = {
	dimensions: { names: string[]; types: Canonical[] };
	measurements: { names: string[]; types: MeasurementTypeName[] };
	defaults: TimeseriesTemplates | null;
	// Seconds, null for INF.
	retention: number | null;
};

export type PointInput = {
	table: PointTable;
	// The entry's own templates for this table, null when its property names the table with none.
	templates: TimeseriesTemplates | null;
	entry: string;
	value: Json;
	value_changed_ts: number;
	// The commit time, seconds.
	at: number;
	// The ledger's values after the write.
	entries: Record<string, Json>;
	twin: string;
	owner: string;
	// The account's uuid, as `{ledger}` renders.
	ledger: string;
	budget?: Budget;
};

export type Dropped = "unknown measurement" | "no timestamp" | "late" | "future";

const ENTRY_NAME: Template = { parts: [{ kind: "entry_name" }] };

export function pointOf(input: PointInput): { point: PointFields } | { dropped: Dropped } {
	const { table, templates, budget } = input;
	const defaults = table.defaults;
	const scope: TemplateInput = {
		entries: input.entries,
		twin: input.twin,
		ledger: input.ledger,
		owner: input.owner,
		entry: { name: input.entry, value: input.value, value_changed_ts: input.value_changed_ts },
	};
	const render = (text: string | undefined, otherwise: Template | null): Json => {
		const template = text === undefined ? otherwise : templateOf(text);
		return template ? renderTemplate(template, scope, budget) : null;
	};

	const measurement = render(templates?.measurement ?? defaults?.measurement, ENTRY_NAME);
	const index = typeof measurement === "string" ? table.measurements.names.indexOf(measurement) : -1;
	if (typeof measurement !== "string" || index < 0) return { dropped: "unknown measurement" };

	const timestampText = templates?.timestamp ?? defaults?.timestamp;
	const ts = timestampText === undefined ? input.at : coerce(render(timestampText, null), "timestamp", budget);
	if (typeof ts !== "number") return { dropped: "no timestamp" };
	if (table.retention !== null && ts < input.at - table.retention) return { dropped: "late" };
	if (ts > input.at + FUTURE_SECONDS) return { dropped: "future" };

	const dims = table.dimensions.names.map((name, i) => {
		const text = ownText(templates?.dimensions, name) ?? ownText(defaults?.dimensions, name);
		return text === undefined ? null : coerce(render(text, null), table.dimensions.types[i], budget);
	});
	const type = table.measurements.types[index];
	const value = type === "json" ? input.value : coerce(input.value, type, budget);
	return { point: { entry: input.entry, ts, twin: input.twin, dims, measurement, value } };
}

// Own keys only: a dimension named like a member of Object.prototype is just a name.
function ownText(templates: Record<string, string> | undefined, name: string): string | undefined {
	return templates && Object.hasOwn(templates, name) ? templates[name] : undefined;
}

// Templates were checked when written; one that no longer parses renders nothing (null).
function templateOf(text: string): Template | null {
	const parsed = parseTemplate(text, { entryFields: true });
	return parsed.ok ? parsed.template : null;
}

import { describe, expect, it } from "vitest";
import { entryLine, gzipMember, identityLine, indexLine, twinLine, wholeParts } from "../../../src/jobs/export-lines";
import type { StoredEntry } from "../../../src/account/ledger-view";

const TWIN = "0b6f2a1e-5c1d-4a7e-9f1b-3c2d4e5f6a7b";
const ACCOUNT = "6a1c8e0f-2b3d-4e5f-8a9b-0c1d2e3f4a5b";

async function gunzip(bytes: Uint8Array): Promise<string> {
	const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
	return new Response(stream).text();
}

describe("an export's lines", () => {
	it("show a twin with its JSON columns as JSON, keys in the file's order", () => {
		const line = twinLine({
			uuid: TWIN,
			verdict: 1,
			owner: ACCOUNT,
			status: "alive",
			description: '{"site":"north","n":[1,2]}',
			creation_certificate: `{"uuid":"${TWIN}","creator":"${ACCOUNT}","created_ts":1.5}`,
			termination_certificate: null,
			updated_ts: 2.25,
		});
		expect(line.endsWith("}\n")).toBe(true);
		const parsed = JSON.parse(line);
		expect(Object.keys(parsed)).toEqual([
			"uuid",
			"owner",
			"status",
			"description",
			"creation_certificate",
			"termination_certificate",
			"updated_ts",
		]);
		expect(parsed).toMatchObject({ description: { site: "north", n: [1, 2] }, termination_certificate: null });
	});

	it("show an identity flat", () => {
		const row = {
			twin: TWIN,
			account: ACCOUNT,
			identity: "RFID#1",
			validity_ts: null,
			visibility: "true",
			created_ts: 1,
			updated_ts: 2,
		};
		expect(JSON.parse(identityLine(row))).toEqual({
			twin: TWIN,
			identity: "RFID#1",
			validity_ts: null,
			visibility: "true",
			created_ts: 1,
			updated_ts: 2,
		});
	});

	it("show an entry's value as JSON, not as its text", () => {
		const entry: StoredEntry = {
			name: "status",
			value: { state: "running", rpm: 1450 },
			text: '{"state":"running","rpm":1450}',
			size: 40,
			visibility: null,
			history: "30D",
			publish: { changed: "true" },
			timeseries: null,
			entry_created_ts: 1,
			entry_updated_ts: 2,
			value_changed_ts: 3,
		};
		const parsed = JSON.parse(entryLine(TWIN, ACCOUNT, entry));
		expect(Object.keys(parsed)).toEqual([
			"twin",
			"ledger",
			"entry",
			"value",
			"visibility",
			"history",
			"publish",
			"entry_created_ts",
			"entry_updated_ts",
			"value_changed_ts",
		]);
		expect(parsed).toMatchObject({ ledger: ACCOUNT, entry: "status", value: { state: "running", rpm: 1450 } });
	});

	it("show an index row by its table's name", () => {
		expect(indexLine("pumps", TWIN, { rpm: 1450, state: null }, 3)).toBe(
			`{"table":"pumps","twin":"${TWIN}","properties":{"rpm":1450,"state":null},"updated_ts":3}\n`,
		);
	});
});

describe("an export's bytes", () => {
	it("are gzip members that read as one stream once appended", async () => {
		const first = await gzipMember(['{"a":1}\n', '{"b":"é"}\n']);
		const second = await gzipMember(['{"c":3}\n']);
		expect([...first.slice(0, 2)]).toEqual([0x1f, 0x8b]);
		const both = new Uint8Array([...first, ...second]);
		expect(await gunzip(both)).toBe('{"a":1}\n{"b":"é"}\n{"c":3}\n');
		// No line: a member all the same, so an empty file is gzip too.
		expect(await gunzip(await gzipMember([]))).toBe("");
	});

	it("go in whole parts of one size, the rest left for later", () => {
		const bytes = Uint8Array.from({ length: 23 }, (_, i) => i);
		const { parts, rest } = wholeParts(bytes, 10);
		expect(parts.map((part) => [...part])).toEqual([
			[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
			[10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
		]);
		expect([...rest]).toEqual([20, 21, 22]);
		expect(wholeParts(bytes.subarray(0, 10), 10).rest.length).toBe(0);
		expect(wholeParts(bytes.subarray(0, 9), 10).parts).toEqual([]);
	});
});

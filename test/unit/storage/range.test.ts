import { describe, expect, it } from "vitest";
import { readRange } from "../../../src/storage/range";

// readRange: the one `Range: bytes=` form download_doc serves (RFC 9110 §14.1.2), what it
// refuses as unsatisfiable (416), and every other form ignored for the whole file.

const part = (offset: number, length: number) => ({ kind: "part", range: { offset, length } });
const whole = { kind: "whole" };
const unsatisfiable = { kind: "unsatisfiable" };

describe("readRange", () => {
	it("answers the whole file without a header", () => {
		expect(readRange(undefined, 100)).toEqual(whole);
		expect(readRange(null, 100)).toEqual(whole);
		expect(readRange("", 100)).toEqual(whole);
	});

	it("reads first-last, clipped to the file's end", () => {
		expect(readRange("bytes=0-9", 100)).toEqual(part(0, 10));
		expect(readRange("bytes=10-19", 100)).toEqual(part(10, 10));
		expect(readRange("bytes=5-5", 100)).toEqual(part(5, 1));
		expect(readRange("bytes=99-99", 100)).toEqual(part(99, 1));
		expect(readRange("bytes=90-1000", 100)).toEqual(part(90, 10));
		expect(readRange("bytes=0-99", 100)).toEqual(part(0, 100));
	});

	it("reads first- to the end", () => {
		expect(readRange("bytes=0-", 100)).toEqual(part(0, 100));
		expect(readRange("bytes=40-", 100)).toEqual(part(40, 60));
		expect(readRange("bytes=99-", 100)).toEqual(part(99, 1));
	});

	it("reads a suffix as the last bytes, the whole file when longer", () => {
		expect(readRange("bytes=-1", 100)).toEqual(part(99, 1));
		expect(readRange("bytes=-10", 100)).toEqual(part(90, 10));
		expect(readRange("bytes=-100", 100)).toEqual(part(0, 100));
		expect(readRange("bytes=-500", 100)).toEqual(part(0, 100));
	});

	it("finds a first position at or past the end unsatisfiable, open-ended or not", () => {
		expect(readRange("bytes=100-", 100)).toEqual(unsatisfiable);
		expect(readRange("bytes=100-100", 100)).toEqual(unsatisfiable);
		expect(readRange("bytes=150-", 100)).toEqual(unsatisfiable);
		expect(readRange("bytes=150-200", 100)).toEqual(unsatisfiable);
	});

	it("finds an empty suffix, and any range of an empty file, unsatisfiable", () => {
		expect(readRange("bytes=-0", 100)).toEqual(unsatisfiable);
		expect(readRange("bytes=0-", 0)).toEqual(unsatisfiable);
		expect(readRange("bytes=0-0", 0)).toEqual(unsatisfiable);
		expect(readRange("bytes=-5", 0)).toEqual(unsatisfiable);
	});

	it("ignores a last position before the first", () => {
		expect(readRange("bytes=20-10", 100)).toEqual(whole);
		expect(readRange("bytes=200-10", 100)).toEqual(whole);
	});

	it("ignores several ranges, other units and malformed values", () => {
		for (const header of [
			"bytes=0-1,5-6",
			"bytes=0-1, 5-6",
			"items=0-1",
			"Bytes=0-1",
			"bytes 0-1",
			"bytes=-",
			"bytes=a-b",
			"bytes=1.5-2",
			"bytes=0x1-2",
			"bytes=--1",
			"bytes=-1-2",
			"0-10",
			"bytes=",
		]) {
			expect([header, readRange(header, 100)]).toEqual([header, whole]);
		}
	});

	it("takes whitespace around the value", () => {
		expect(readRange("  bytes=1-2 ", 100)).toEqual(part(1, 2));
	});

	it("stays exact past 2^32 bytes", () => {
		const size = 2 ** 33;
		expect(readRange(`bytes=${2 ** 32}-`, size)).toEqual(part(2 ** 32, 2 ** 32));
		expect(readRange("bytes=-1", size)).toEqual(part(size - 1, 1));
	});
});

// One `Range: bytes=` range of RFC 9110 against a file of `size` bytes. Only the single-range
// form is served; any other form (several ranges, another unit, nonsense) is ignored and the
// whole file answered, as the RFC allows a server to do.

export type ByteRange = { offset: number; length: number };
export type RangeAnswer = { kind: "whole" } | { kind: "part"; range: ByteRange } | { kind: "unsatisfiable" };

const SINGLE = /^bytes=(\d*)-(\d*)$/;

export function readRange(header: string | null | undefined, size: number): RangeAnswer {
	const match = header ? SINGLE.exec(header.trim()) : null;
	if (!match) return { kind: "whole" };
	const [, first, last] = match;
	if (first === "" && last === "") return { kind: "whole" };
	if (first === "") {
		// The last `last` bytes.
		const suffix = Number(last);
		if (suffix === 0 || size === 0) return { kind: "unsatisfiable" };
		const length = Math.min(suffix, size);
		return { kind: "part", range: { offset: size - length, length } };
	}
	const start = Number(first);
	// Only a last position the client wrote makes the range invalid (and ignored) when it comes
	// before the first: an open range ends with the file, so `bytes=<size>-` (and any open
	// range of an empty file) used to read as invalid and answer the whole file, where RFC 9110
	// makes a first position at or past the end unsatisfiable.
	if (last !== "" && Number(last) < start) return { kind: "whole" };
	if (start >= size) return { kind: "unsatisfiable" };
	const end = last === "" ? size - 1 : Number(last);
	return { kind: "part", range: { offset: start, length: Math.min(end, size - 1) - start + 1 } };
}

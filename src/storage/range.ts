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
	const end = last === "" ? size - 1 : Number(last);
	if (end < start) return { kind: "whole" };
	if (start >= size) return { kind: "unsatisfiable" };
	return { kind: "part", range: { offset: start, length: Math.min(end, size - 1) - start + 1 } };
}

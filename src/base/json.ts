// JSON as the API carries it, and its size as the limits count it: UTF-8 bytes of the text.
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const encoder = new TextEncoder();
const NON_ASCII = /[\u0080-\uffff]/;

// Text that is all ASCII is one byte a character: most of what is counted (a scan page counts
// each twin) needs no encoding, which in the Workers runtime is a call out of JavaScript.
export function utf8Bytes(text: string): number {
	return NON_ASCII.test(text) ? encoder.encode(text).length : text.length;
}

export function jsonBytes(value: unknown): number {
	return utf8Bytes(JSON.stringify(value));
}

// The zod metadata key that marks a schema of any JSON value, for the API document.
export const ANY_JSON = "anyJson";

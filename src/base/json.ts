// JSON as the API carries it, and its size as the limits count it: UTF-8 bytes of the text.
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const encoder = new TextEncoder();

export function utf8Bytes(text: string): number {
	return encoder.encode(text).length;
}

export function jsonBytes(value: unknown): number {
	return utf8Bytes(JSON.stringify(value));
}

// The zod metadata key that marks a schema of any JSON value, for the API document.
export const ANY_JSON = "anyJson";

// The account's log read through get_log page by page, by the log's tests and the stickers'.
import { expect } from "vitest";
import { call } from "../support/requests";

// Every line of the account's log, read through get_log page by page.
export async function logLines(secret: string): Promise<string[]> {
	const lines: string[] = [];
	let fragment: string | null = null;
	for (;;) {
		const res = await call("GET", `/log${fragment ? `?fragment=${fragment}` : ""}`, { secret });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		lines.push(...res.body.messages);
		if (res.body.messages.length < 100) return lines;
		fragment = res.body.fragment;
	}
}

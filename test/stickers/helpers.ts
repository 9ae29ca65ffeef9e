// What the stickers tests (and a stream test) share: a sticker's path, stickers put on a twin
// through the API, and an account on a given database.
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { homeOf } from "../../src/db/shards";
import { type Account, bootstrap } from "../support/accounts";
import { call } from "../support/requests";

export const stickerPath = (twin: string, color?: string, query = "") =>
	`/twins/${twin}/stickers${color === undefined ? "" : `/${color}`}${query}`;

export type StickerIn = {
	note?: string | null;
	recipients: string[];
	validity_ts?: number;
	publish?: Record<string, string | string[]>;
};

// Puts stickers of the caller's account on `twin`, expecting 201.
export async function putStickers(secret: string, twin: string, stickers: Record<string, StickerIn>) {
	const res = await call("POST", stickerPath(twin), { secret, body: { stickers } });
	expect(res.status, JSON.stringify(res.body)).toBe(201);
	return res.body.stickers as Record<
		string,
		{
			note: string | null;
			recipients: string[];
			validity_ts: number;
			created_ts: number;
			publish: Record<string, string[]>;
		}
	>;
}

// A new account whose rows live on `binding` (DB_0 or DB_1): an account's bucket is drawn at
// random, so accounts are made until one lands there.
export async function accountOn(binding: string): Promise<Account> {
	for (let tries = 0; tries < 40; tries++) {
		const made = await bootstrap();
		if (homeOf(env, made.account) === binding) return made;
	}
	throw new Error(`No new account landed on ${binding}`);
}

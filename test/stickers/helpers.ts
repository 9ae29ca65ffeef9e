// What the stickers tests (and a stream test) share: a sticker's path and stickers put on a twin
// through the API.
import { expect } from "vitest";
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

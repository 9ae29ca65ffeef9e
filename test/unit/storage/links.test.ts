import { describe, expect, it } from "vitest";
import { canSign, signDownload, verifyDownload } from "../../../src/storage/links";

const KEY = "a-download-key-of-at-least-32-characters";
const ACCOUNT = "0b6f2a1e-5c1d-4a7e-9f1b-3c2d4e5f6a7b";
const DOC = "6a1c8e0f-2b3d-4e5f-8a9b-0c1d2e3f4a5b";
const NOW = 1_800_000_000_000;

describe("download links", () => {
	it("open for the account and doc they were signed for, until they expire", async () => {
		const handler = (await signDownload(KEY, ACCOUNT, DOC, NOW + 1000))!;
		expect(handler.startsWith(`${DOC}.${NOW + 1000}.`)).toBe(true);
		expect(await verifyDownload(KEY, ACCOUNT, handler, NOW)).toEqual({ doc: DOC, disposition: "attachment" });
		expect(await verifyDownload(KEY, ACCOUNT, handler, NOW + 1000)).toBeUndefined();
	});

	it("do not open under another account, another key, or with any part changed", async () => {
		const handler = (await signDownload(KEY, ACCOUNT, DOC, NOW + 1000))!;
		const [doc, expiry, mac] = handler.split(".");
		expect(await verifyDownload(KEY, "1b6f2a1e-5c1d-4a7e-9f1b-3c2d4e5f6a7b", handler, NOW)).toBeUndefined();
		expect(await verifyDownload(`${KEY}!`, ACCOUNT, handler, NOW)).toBeUndefined();
		expect(await verifyDownload(KEY, ACCOUNT, `${doc}.${Number(expiry) + 1}.${mac}`, NOW)).toBeUndefined();
		expect(await verifyDownload(KEY, ACCOUNT, `${`7${doc.slice(1)}`}.${expiry}.${mac}`, NOW)).toBeUndefined();
		expect(await verifyDownload(KEY, ACCOUNT, `${doc}.${expiry}.${mac.slice(0, -2)}AA`, NOW)).toBeUndefined();
		for (const junk of [
			"",
			".",
			"..",
			`${doc}.${expiry}`,
			`${handler}.x`,
			`${doc}.-1.${mac}`,
			`${doc}.1e9.${mac}`,
			`not-a-uuid.${expiry}.${mac}`,
		]) {
			expect([junk, await verifyDownload(KEY, ACCOUNT, junk, NOW)]).toEqual([junk, undefined]);
		}
	});

	it("carry an inline disposition under their mac: it cannot be added to or taken from a handler", async () => {
		const inline = (await signDownload(KEY, ACCOUNT, DOC, NOW + 1000, "inline"))!;
		expect(await verifyDownload(KEY, ACCOUNT, inline, NOW)).toEqual({ doc: DOC, disposition: "inline" });
		const [doc, expiry, word, mac] = inline.split(".");
		expect(word).toBe("inline");
		expect(await verifyDownload(KEY, ACCOUNT, `${doc}.${expiry}.${mac}`, NOW)).toBeUndefined();
		const attachment = (await signDownload(KEY, ACCOUNT, DOC, NOW + 1000))!;
		const [, , plainMac] = attachment.split(".");
		expect(await verifyDownload(KEY, ACCOUNT, `${doc}.${expiry}.inline.${plainMac}`, NOW)).toBeUndefined();
		expect(await verifyDownload(KEY, ACCOUNT, `${doc}.${expiry}.shown.${mac}`, NOW)).toBeUndefined();
	});

	it("are neither issued nor honoured without a key of at least 32 characters", async () => {
		const handler = (await signDownload(KEY, ACCOUNT, DOC, NOW + 1000))!;
		for (const key of [undefined, "", "short"]) {
			expect(canSign(key)).toBe(false);
			expect(await signDownload(key, ACCOUNT, DOC, NOW + 1000)).toBeUndefined();
			expect(await verifyDownload(key, ACCOUNT, handler, NOW)).toBeUndefined();
		}
		expect(canSign(KEY)).toBe(true);
	});
});

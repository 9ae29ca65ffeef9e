import { describe, expect, it } from "vitest";
import { keptMediaType, OCTET_STREAM, showsInline } from "../../../src/storage/media-type";

describe("keptMediaType", () => {
	it("keeps a media type, its type and subtype lowercased, its parameters as given", () => {
		expect(keptMediaType("application/PDF")).toBe("application/pdf");
		expect(keptMediaType(" text/plain ;charset=UTF-8 ")).toBe("text/plain; charset=UTF-8");
		expect(keptMediaType("image/svg+xml")).toBe("image/svg+xml");
	});

	it("is application/octet-stream for nothing, or for what is not a media type", () => {
		for (const header of [
			undefined,
			"",
			"pdf",
			"a/b/c",
			"text/html; <script>",
			'text/plain; charset="utf-8"',
			`image/${"x".repeat(260)}`,
		]) {
			expect([header, keptMediaType(header)]).toEqual([header, OCTET_STREAM]);
		}
	});
});

describe("showsInline", () => {
	it("admits PDF, raster images, plain text, audio and video only", () => {
		for (const type of [
			"application/pdf",
			"image/png",
			"image/jpeg",
			"image/gif",
			"image/webp",
			"text/plain; charset=utf-8",
			"audio/ogg",
			"video/webm",
		])
			expect([type, showsInline(type)]).toEqual([type, true]);
		for (const type of [
			"text/html",
			"image/svg+xml",
			"application/xhtml+xml",
			"application/xml",
			"text/xml",
			"application/javascript",
			"application/octet-stream",
			"multipart/mixed",
			"audio/../text/html",
		]) {
			expect([type, showsInline(type)]).toEqual([type, false]);
		}
	});
});

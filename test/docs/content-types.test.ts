import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { docPath, download, patterned, putFile, uploadUrl } from "./helpers";

// A doc keeps its upload's Content-Type and is served with it (docs/files.md): as an
// attachment, or inline when its download URL asked for it and the type is one a browser shows
// without running anything. Every download is sandboxed and never sniffed.

async function docOfType(contentType: string | undefined, name = "inspection.pdf") {
	const admin = await bootstrap();
	const twin = await newTwin(admin.secret);
	const bytes = patterned(300, 7);
	const { handler, url } = await uploadUrl(admin.secret);
	const put = await putFile(url, bytes, contentType === undefined ? {} : { "content-type": contentType });
	expect(put.status, JSON.stringify(put.body)).toBe(200);
	const attached = await call("POST", docPath(twin), { secret: admin.secret, body: { docs: { [name]: { handler } } } });
	expect(attached.status, JSON.stringify(attached.body)).toBe(201);
	const link = async (query = "") => {
		const res = await call("GET", `${docPath(twin, name)}?download=true${query}`, { secret: admin.secret });
		expect(res.status, JSON.stringify(res.body)).toBe(200);
		return res.body.download.url as string;
	};
	return { admin, twin, name, bytes, record: attached.body.docs[name], link };
}

const SANDBOX = "sandbox; default-src 'none'";

describe("a doc's content type", () => {
	it("is the upload's Content-Type, in the record and on its downloads, an attachment by default", async () => {
		const { admin, twin, name, bytes, record, link } = await docOfType("application/PDF");
		expect(record.content_type).toBe("application/pdf");
		expect((await call("GET", docPath(twin, name), { secret: admin.secret })).body.content_type).toBe(
			"application/pdf",
		);
		const res = await download(await link());
		expect(res.bytes).toEqual(bytes);
		expect(res.headers.get("content-type")).toBe("application/pdf");
		expect(res.headers.get("content-disposition")).toBe('attachment; filename="inspection.pdf"');
		expect(res.headers.get("x-content-type-options")).toBe("nosniff");
		expect(res.headers.get("content-security-policy")).toBe(SANDBOX);
	});

	it("keeps a media type's parameters, and is application/octet-stream when absent or not a media type", async () => {
		expect((await docOfType("text/plain; charset=utf-8", "notes.txt")).record.content_type).toBe(
			"text/plain; charset=utf-8",
		);
		for (const sent of [undefined, "pdf", "text/html; <script>", `image/${"x".repeat(300)}`, "a/b/c"]) {
			expect([sent, (await docOfType(sent)).record.content_type]).toEqual([sent, "application/octet-stream"]);
		}
	});

	it("is shown inline when the URL asks and the type is safe: PDF, images but SVG, plain text, audio, video", async () => {
		for (const type of [
			"application/pdf",
			"image/png",
			"image/jpeg",
			"image/gif",
			"image/webp",
			"text/plain; charset=utf-8",
			"audio/mpeg",
			"video/mp4",
		]) {
			const { link } = await docOfType(type, "shown");
			const res = await download(await link("&disposition=inline"));
			expect([type, res.status, res.headers.get("content-disposition"), res.headers.get("content-type")]).toEqual([
				type,
				200,
				'inline; filename="shown"',
				type,
			]);
			expect(res.headers.get("content-security-policy")).toBe(SANDBOX);
			expect(res.headers.get("x-content-type-options")).toBe("nosniff");
		}
	});

	it("stays an attachment for anything that could run on the API's origin, whatever the URL asks", async () => {
		for (const type of [
			"text/html",
			"image/svg+xml",
			"application/xhtml+xml",
			"text/javascript",
			"application/octet-stream",
			"application/json",
		]) {
			const { link } = await docOfType(type, "page");
			const res = await download(await link("&disposition=inline"));
			expect([type, res.headers.get("content-disposition"), res.headers.get("content-security-policy")]).toEqual([
				type,
				'attachment; filename="page"',
				SANDBOX,
			]);
		}
	});

	it("cannot be turned inline by editing an attachment URL, nor asked for without download=true", async () => {
		const { admin, twin, name, link } = await docOfType("application/pdf");
		const url = await link("&disposition=attachment");
		const at = url.lastIndexOf("/");
		const [doc, expiry, mac] = url.slice(at + 1).split(".");
		const edited = `${url.slice(0, at + 1)}${doc}.${expiry}.inline.${mac}`;
		expect((await download(edited)).status).toBe(404);
		expect((await download(url)).headers.get("content-disposition")).toBe('attachment; filename="inspection.pdf"');
		expectError(await call("GET", `${docPath(twin, name)}?disposition=inline`, { secret: admin.secret }), 400, 400101);
		expectError(
			await call("GET", `${docPath(twin, name)}?download=true&disposition=open`, { secret: admin.secret }),
			400,
			400101,
		);
	});
});

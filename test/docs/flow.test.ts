import { describe, expect, it } from "vitest";
import { BASE, call, expectError } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { newTwin } from "../support/twins";
import { docPath, download, putFile, sha256Hex, uploadUrl } from "./helpers";

// The whole path of one file, as a client walks it: an upload URL, the PUT, the attach, the
// listing, a download URL, a whole and a ranged download, the delete. Each step's refusals and
// edges are in the other files of this folder.

describe("docs flow", () => {
	it("uploads, attaches, lists and downloads", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = await uploadUrl(admin.secret);
		const bytes = new Uint8Array(3 * 65536).map((_, i) => (i * 7919) % 251);
		const up = await putFile(created.url, bytes);
		expect(up.status).toBe(200);
		expect(up.body).toEqual({ handler: created.handler, size: bytes.length, hash: await sha256Hex(bytes) });
		expectError(await putFile(created.url, bytes), 409, 409172);
		const attached = await call("POST", docPath(twin), {
			secret: admin.secret,
			body: { docs: { "manuals/a.pdf": { handler: created.handler, hash: up.body.hash.toUpperCase() } } },
		});
		expect(attached.status).toBe(201);
		expect(Object.keys(attached.body.docs["manuals/a.pdf"])).toEqual([
			"creation_certificate",
			"storage_class",
			"content_type",
			"updated_ts",
			"status",
		]);
		const list = await call("GET", `${docPath(twin)}?view=tree`, { secret: admin.secret });
		expect(list.body.docs["manuals/"]["a.pdf"][2]).toBe(bytes.length);
		const got = await call("GET", `${docPath(twin, "manuals/a.pdf")}?download=true`, { secret: admin.secret });
		expect(got.status).toBe(200);
		const url = got.body.download.url as string;
		expect(url.startsWith(`${BASE}/download/${admin.account}/`)).toBe(true);
		const whole = await download(url);
		expect(whole.status).toBe(200);
		expect(whole.headers.get("content-disposition")).toBe('attachment; filename="a.pdf"');
		expect(whole.bytes).toEqual(bytes);
		const part = await download(url, { range: "bytes=10-19" });
		expect(part.status).toBe(206);
		expect(part.headers.get("content-range")).toBe(`bytes 10-19/${bytes.length}`);
		expect(part.bytes).toEqual(bytes.slice(10, 20));
		const removed = await call("DELETE", docPath(twin, "manuals%2Fa.pdf"), { secret: admin.secret });
		expect(removed.status).toBe(200);
		expectError(await download(url), 404, 404171);
	});
});

import { describe, expect, it } from "vitest";
import { BASE, bootstrap, call, expectError, newTwin } from "../fixtures";

async function sha256(bytes: Uint8Array) {
	return Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function put(url: string, bytes: Uint8Array, headers: Record<string, string> = {}) {
	const request = new Request(url, { method: "PUT", body: bytes, headers: { "cf-connecting-ip": "10.9.9.9", ...headers } });
	const response = await exports.default.fetch(request);
	return { status: response.status, headers: response.headers, body: await response.json() as any };
}

import { exports } from "cloudflare:workers";

describe("docs flow", () => {
	it("uploads, attaches, lists and downloads", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const created = await call("POST", "/cache", { secret: admin.secret });
		expect(created.status).toBe(201);
		const bytes = new Uint8Array(3 * 65536).map((_, i) => (i * 7919) % 251);
		const up = await put(created.body.url, bytes);
		expect(up.status).toBe(200);
		expect(up.body).toEqual({ handler: created.body.handler, size: bytes.length, hash: await sha256(bytes) });
		expectError(await put(created.body.url, bytes), 409, 409172);
		const attached = await call("POST", `/twins/${twin}/docs`, { secret: admin.secret, body: { docs: { "manuals/a.pdf": { handler: created.body.handler, hash: up.body.hash.toUpperCase() } } } });
		expect(attached.status).toBe(201);
		expect(Object.keys(attached.body.docs["manuals/a.pdf"])).toEqual(["creation_certificate", "storage_class", "updated_ts", "status"]);
		const list = await call("GET", `/twins/${twin}/docs?view=tree`, { secret: admin.secret });
		expect(list.body.docs["manuals/"]["a.pdf"][2]).toBe(bytes.length);
		const got = await call("GET", `/twins/${twin}/docs/manuals/a.pdf?download=true`, { secret: admin.secret });
		expect(got.status).toBe(200);
		const url = got.body.download.url as string;
		expect(url.startsWith(`${BASE}/download/${admin.account}/`)).toBe(true);
		const response = await exports.default.fetch(new Request(url));
		expect(response.status).toBe(200);
		expect(response.headers.get("content-disposition")).toBe('attachment; filename="a.pdf"');
		expect(new Uint8Array(await response.arrayBuffer())).toEqual(bytes);
		const part = await exports.default.fetch(new Request(url, { headers: { range: "bytes=10-19" } }));
		expect(part.status).toBe(206);
		expect(part.headers.get("content-range")).toBe(`bytes 10-19/${bytes.length}`);
		expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.slice(10, 20));
		const removed = await call("DELETE", `/twins/${twin}/docs/manuals%2Fa.pdf`, { secret: admin.secret });
		expect(removed.status).toBe(200);
		const gone = await exports.default.fetch(new Request(url));
		expect(gone.status).toBe(404);
	});
});

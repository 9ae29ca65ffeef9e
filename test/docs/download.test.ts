import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call, expectError, fetchWithEnv, randomAddress } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { clockPast } from "../support/waiting";
import {
	attachDoc,
	docObject,
	docPath,
	download,
	downloadUrl,
	patterned,
	putFile,
	sha256Hex,
	transfer,
	uploadUrl,
} from "./helpers";

// download_doc (docs/files.md "Downloading"): the bytes and their headers, one range, and every way a download
// URL dies: forged, expired, its doc deleted or replaced.

// A twin with one doc of `size` patterned bytes, and a download URL of it.
async function docWithUrl(size: number, name = "folder/file.bin") {
	const admin = await bootstrap();
	const twin = await newTwin(admin.secret);
	const bytes = patterned(size, size);
	await attachDoc(admin.secret, twin, name, bytes);
	return { admin, twin, bytes, name, url: await downloadUrl(admin.secret, twin, name) };
}

// The URL with one part of its handler (`<doc uuid>.<expiry ms>.<mac>`) changed.
function forged(url: string, change: (parts: string[]) => string[]) {
	const at = url.lastIndexOf("/");
	return `${url.slice(0, at + 1)}${change(url.slice(at + 1).split(".")).join(".")}`;
}

const flip = (text: string, i: number) => `${text.slice(0, i)}${text[i] === "A" ? "B" : "A"}${text.slice(i + 1)}`;

describe("download_doc", () => {
	it("answers the bytes as an attachment, with the contract's headers", async () => {
		const { bytes, url } = await docWithUrl(70_001, "reports/2024/q1.pdf");
		const res = await download(url);
		expect(res.status).toBe(200);
		expect(res.bytes).toEqual(bytes);
		expect(res.headers.get("content-type")).toBe("application/octet-stream");
		expect(res.headers.get("content-length")).toBe("70001");
		expect(res.headers.get("etag")).toBe(`"${await sha256Hex(bytes)}"`);
		expect(res.headers.get("accept-ranges")).toBe("bytes");
		expect(res.headers.get("content-disposition")).toBe('attachment; filename="q1.pdf"');
		expect(res.headers.get("cache-control")).toBe("private, no-store");
		expect(res.headers.get("x-content-type-options")).toBe("nosniff");
		expect(res.headers.get("content-range")).toBeNull();
		// Again: a download URL is not used up.
		expect((await download(url)).bytes).toEqual(bytes);
	});

	it("answers HEAD as GET without the bytes: the same status and headers, ranges and refusals included", async () => {
		const { url } = await docWithUrl(70_001, "reports/2024/q1.pdf");
		const pairs: [headers: Record<string, string>, status: number][] = [
			[{}, 200],
			[{ range: "bytes=10-19" }, 206],
			[{ range: "bytes=70001-" }, 416],
		];
		for (const [headers, status] of pairs) {
			const got = await download(url, headers);
			const head = await transfer(url, { method: "HEAD", headers });
			expect([head.status, got.status]).toEqual([status, status]);
			expect(head.bytes.length).toBe(0);
			const compared = [
				"content-type",
				"content-length",
				"etag",
				"accept-ranges",
				"content-disposition",
				"cache-control",
				"x-content-type-options",
				"content-range",
			];
			for (const name of compared) expect([name, head.headers.get(name)]).toEqual([name, got.headers.get(name)]);
		}
		const dead = await transfer(`${BASE}/download/${crypto.randomUUID()}/${"x".repeat(20)}`, { method: "HEAD" });
		expect(dead.status).toBe(404);
		expect(dead.bytes.length).toBe(0);
		// The path names HEAD among its methods.
		const post = await transfer(url, { method: "POST" });
		expect(post.status).toBe(405);
		expect(post.headers.get("allow")).toBe("GET, HEAD");
	});

	it("answers an empty file", async () => {
		const { url } = await docWithUrl(0, "empty");
		const res = await download(url);
		expect(res.status).toBe(200);
		expect(res.bytes.length).toBe(0);
		expect(res.headers.get("etag")).toBe('"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"');
		expect(res.headers.get("content-disposition")).toBe('attachment; filename="empty"');
		// No range of an empty file can be satisfied.
		const ranged = await download(url, { range: "bytes=0-" });
		expectError(ranged, 416, 416171);
		expect(ranged.headers.get("content-range")).toBe("bytes */0");
	});

	it("serves one range with 206 and Content-Range: first-last, first-, suffix, clipped to the end", async () => {
		const { bytes, url } = await docWithUrl(1000);
		const cases: [string, number, number][] = [
			["bytes=10-19", 10, 19],
			["bytes=0-0", 0, 0],
			["bytes=990-", 990, 999],
			["bytes=-10", 990, 999],
			["bytes=-5000", 0, 999],
			["bytes=500-99999", 500, 999],
			["bytes=999-999", 999, 999],
			[" bytes=1-2 ", 1, 2],
		];
		for (const [range, first, last] of cases) {
			const res = await download(url, { range });
			expect([range, res.status]).toEqual([range, 206]);
			expect(res.headers.get("content-range")).toBe(`bytes ${first}-${last}/1000`);
			expect(res.headers.get("content-length")).toBe(String(last - first + 1));
			expect(res.headers.get("etag")).toBe(`"${await sha256Hex(bytes)}"`);
			expect(res.headers.get("accept-ranges")).toBe("bytes");
			expect(res.bytes).toEqual(bytes.slice(first, last + 1));
		}
	});

	it("answers 416171 with Content-Range: bytes */size for a range it cannot satisfy", async () => {
		const { url } = await docWithUrl(100);
		for (const range of ["bytes=100-", "bytes=100-200", "bytes=5000-5001", "bytes=-0"]) {
			const res = await download(url, { range });
			expect([range, res.status]).toEqual([range, 416]);
			expectError(res, 416, 416171);
			expect(res.headers.get("content-range")).toBe("bytes */100");
		}
	});

	it("ignores other forms of Range and answers the whole file with 200", async () => {
		const { bytes, url } = await docWithUrl(100);
		for (const range of [
			"bytes=0-1,5-6",
			"bytes=0-1, 200-300",
			"items=0-1",
			"bytes=20-10",
			"bytes=-",
			"bytes=a-b",
			"0-10",
			"",
		]) {
			const res = await download(url, { range });
			expect([range, res.status]).toEqual([range, 200]);
			expect(res.headers.get("content-range")).toBeNull();
			expect(res.bytes).toEqual(bytes);
		}
	});

	it("answers 404171 for a forged handler: another mac, doc, expiry or account, or none at all", async () => {
		const { admin, url, bytes } = await docWithUrl(64);
		const other = await bootstrap();
		const [, expiry, mac] = url.slice(url.lastIndexOf("/") + 1).split(".");
		const attempts = [
			forged(url, ([doc, e, m]) => [doc, e, flip(m, 3)]),
			forged(url, ([doc, e, m]) => [doc, e, m.slice(0, -2)]),
			forged(url, ([doc, e]) => [doc, e, ""]),
			forged(url, ([, e, m]) => [crypto.randomUUID(), e, m]),
			forged(url, ([doc, e, m]) => [doc, String(Number(e) + 1000), m]),
			forged(url, ([doc, e, m]) => [doc, e, m, "x"]),
			forged(url, ([doc, e]) => [doc, e]),
			forged(url, ([doc]) => [doc]),
			forged(url, ([doc, e, m]) => [doc.toUpperCase(), e, m]),
			url.replace(`/download/${admin.account}/`, `/download/${other.account}/`),
			url.replace(`/download/${admin.account}/`, `/download/${crypto.randomUUID()}/`),
			`${BASE}/download/${admin.account}/${"x".repeat(100)}`,
		];
		const descriptions = new Set();
		for (const attempt of attempts) {
			const res = await download(attempt);
			expect([attempt, res.status]).toEqual([attempt, 404]);
			expectError(res, 404, 404171);
			descriptions.add(res.body.description);
		}
		expect(descriptions.size).toBe(1);
		// A handler longer than any real one, or an account that is no uuid, is malformed.
		expectError(await download(`${BASE}/download/${admin.account}/${"x".repeat(200)}`), 400, 400101);
		expectError(await download(`${BASE}/download/nobody/${expiry}.${mac}`), 400, 400101);
		// The real one still works.
		expect((await download(url)).bytes).toEqual(bytes);
	});

	it("answers 404171 once the URL has expired", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f", patterned(10));
		const validity = Date.now() / 1000 + 2;
		const url = await downloadUrl(admin.secret, twin, "f", validity);
		expect((await download(url)).status).toBe(200);
		await clockPast(validity);
		expectError(await download(url), 404, 404171);
		expectError(await download(url, { range: "bytes=0-1" }), 404, 404171);
	});

	it("answers 404171 once the doc is deleted, one at a time or all of an account's", async () => {
		const { admin, twin, name, url } = await docWithUrl(32);
		expect((await call("DELETE", docPath(twin, name), { secret: admin.secret })).status).toBe(200);
		expectError(await download(url), 404, 404171);
		await attachDoc(admin.secret, twin, "g", patterned(5));
		const other = await downloadUrl(admin.secret, twin, "g");
		expect((await call("DELETE", docPath(twin), { secret: admin.secret })).status).toBe(200);
		expectError(await download(other), 404, 404171);
	});

	it("ends every older URL when the name is reused for another doc; the new doc's URL works", async () => {
		const { admin, twin, name, url } = await docWithUrl(40);
		const older = await downloadUrl(admin.secret, twin, name, Date.now() / 1000 + 7 * 24 * 3600 - 60);
		expect((await call("DELETE", docPath(twin, name), { secret: admin.secret })).status).toBe(200);
		const replacement = patterned(41, 99);
		await attachDoc(admin.secret, twin, name, replacement);
		for (const old of [url, older]) expectError(await download(old), 404, 404171);
		const fresh = await download(await downloadUrl(admin.secret, twin, name));
		expect(fresh.bytes).toEqual(replacement);
		expect(fresh.headers.get("etag")).toBe(`"${await sha256Hex(replacement)}"`);
	});

	it("is a bearer URL: it works without a credential, after its issuer is deleted, and after a description change", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const bytes = patterned(77);
		await attachDoc(admin.secret, twin, "f", bytes);
		const issuer = await createUser(admin, admin.role, "issuer");
		const url = await downloadUrl(await issueSecret(admin, issuer), twin, "f");
		expect((await call("DELETE", `/users/${issuer}`, { secret: admin.secret })).status).toBe(200);
		expect(
			(await call("PATCH", docPath(twin, "f"), { secret: admin.secret, body: { description: { v: 2 } } })).status,
		).toBe(200);
		// Even with a credential that is no good: the route takes none.
		const res = await download(url, { authorization: "not-a-secret" });
		expect(res.status).toBe(200);
		expect(res.bytes).toEqual(bytes);
	});

	it("serves another account's doc on the URL issued to a reader of the twin", async () => {
		const owner = await bootstrap();
		const twin = await newTwin(owner.secret, { shared: true });
		const bytes = patterned(55);
		await attachDoc(owner.secret, twin, "owners.bin", bytes);
		const reader = await userWithRules(await bootstrap(), { twin: "TWIN.shared == true" });
		const url = await downloadUrl(reader.secret, twin, "owners.bin");
		expect(url.startsWith(`${BASE}/download/${reader.account}/`)).toBe(true);
		expect((await download(url)).bytes).toEqual(bytes);
		// Only on the issuing account's path.
		expectError(await download(url.replace(reader.account, owner.account)), 404, 404171);
	});

	it("answers 404171 when the doc's object is missing from the bucket", async () => {
		const { twin, name, url } = await docWithUrl(16);
		expect((await download(url)).status).toBe(200);
		await env.DOCS.delete(await docObject(twin, name));
		expectError(await download(url), 404, 404171);
	});

	it("spends SECRET_ATTEMPTS on failed lookups only: many downloads pass, forged ones end in 429", async () => {
		const { url, bytes } = await docWithUrl(8);
		const from = randomAddress();
		// Twice the limit of 30 a minute, and more: transfers are traffic, not guesses.
		for (let i = 0; i < 61; i++) expect((await download(url, { "cf-connecting-ip": from })).status).toBe(200);
		const bad = forged(url, ([doc, e, m]) => [doc, e, flip(m, 0)]);
		const statuses: number[] = [];
		for (let i = 0; i < 61 && !statuses.includes(429); i++)
			statuses.push((await download(bad, { "cf-connecting-ip": from })).status);
		expect(statuses.at(-1)).toBe(429);
		expect(statuses.filter((status) => status === 404).length).toBeGreaterThanOrEqual(30);
		// The address is refused then, even for the real URL; another address is served.
		expectError(await download(url, { "cf-connecting-ip": from }), 429, 429101);
		expect((await download(url)).bytes).toEqual(bytes);
	});

	it("needs WEBHOOK_KEY: no URL is issued without it (500102), and none is honoured", async () => {
		const { admin, twin, name, url, bytes } = await docWithUrl(12);
		const res = await call("GET", `${docPath(twin, name)}?download=true`, {
			secret: admin.secret,
			env: { WEBHOOK_KEY: "" },
		});
		expectError(res, 500, 500102);
		expect(res.body.description).toContain("WEBHOOK_KEY");
		// The record alone needs no key.
		expect((await call("GET", docPath(twin, name), { secret: admin.secret, env: { WEBHOOK_KEY: "" } })).status).toBe(
			200,
		);
		const request = () => new Request(url, { headers: { "cf-connecting-ip": randomAddress() } });
		for (const WEBHOOK_KEY of ["", "another-key-of-at-least-32-characters-long"]) {
			const refused = await fetchWithEnv(request(), { WEBHOOK_KEY });
			expect(refused.status).toBe(404);
			expect(((await refused.json()) as { subcode: number }).subcode).toBe(404171);
		}
		const served = await fetchWithEnv(request(), {});
		expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);
	});

	it("carries a multi-megabyte file through upload and download byte for byte", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const bytes = patterned(8 * 1024 * 1024 + 13, 20240601);
		const created = await uploadUrl(admin.secret);
		const put = await putFile(created.url, bytes);
		expect(put.status).toBe(200);
		const hash = await sha256Hex(bytes);
		expect(put.body).toEqual({ handler: created.handler, size: bytes.length, hash });
		const attached = await call("POST", docPath(twin), {
			secret: admin.secret,
			body: { docs: { "big.bin": { handler: created.handler, hash } } },
		});
		expect(attached.status).toBe(201);
		const url = await downloadUrl(admin.secret, twin, "big.bin");
		const whole = await download(url);
		expect(whole.status).toBe(200);
		expect(whole.bytes.length).toBe(bytes.length);
		expect(await sha256Hex(whole.bytes)).toBe(hash);
		// A range across the middle, read from R2 as a range.
		const first = 4 * 1024 * 1024 - 7;
		const part = await download(url, { range: `bytes=${first}-${first + 100_000}` });
		expect(part.status).toBe(206);
		expect(part.bytes).toEqual(bytes.slice(first, first + 100_001));
	});
});

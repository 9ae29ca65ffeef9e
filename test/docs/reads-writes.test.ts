import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { deleteTwinDocs, getTwinDocs } from "../../src/operations/docs";
import { BASE, call, expectError, randomAddress } from "../support/requests";
import { type Account, bootstrap, userWith, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { attachDoc, docBytes, docObject, docPath, download, downloadUrl, patterned } from "./helpers";

// get_twin_docs, delete_twin_docs, get_twin_doc, update_twin_doc and delete_twin_doc (docs/files.md
// "Listing and reading"): listings and their views, the record, the download URL's issue, and who may change what.

const nowSeconds = () => Date.now() / 1000;

// The text of a listing as it came: JSON.parse would put names that read as numbers first.
async function rawList(secret: string, twin: string, query = "") {
	const response = await exports.default.fetch(
		new Request(`${BASE}${docPath(twin)}${query}`, {
			headers: { authorization: secret, "cf-connecting-ip": randomAddress() },
		}),
	);
	expect(response.status).toBe(200);
	expect(response.headers.get("content-type")).toContain("application/json");
	return response.text();
}

// The names of a listing's text in the order written (depth first in the tree view).
const keysInText = (text: string) =>
	[...text.matchAll(/"([^"]+)":/g)].map((match) => match[1]).filter((key) => key !== "docs");

async function list(secret: string, twin: string, query = "") {
	const res = await call("GET", `${docPath(twin)}${query}`, { secret });
	expect(res.status, JSON.stringify(res.body)).toBe(200);
	return res.body.docs;
}

// A twin of a new account, with a user of another account that sees it.
async function sharedTwin(): Promise<{ owner: Account; other: Account; twin: string }> {
	const owner = await bootstrap();
	const twin = await newTwin(owner.secret, { shared: true });
	const other = await userWithRules(await bootstrap(), { twin: "TWIN.shared == true" });
	return { owner, other, twin };
}

describe("get_twin_docs", () => {
	it("lists every doc as [created_ts, updated_ts, size], names in byte order on the wire", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		expect(await list(admin.secret, twin)).toEqual({});
		// Attached out of order. Byte order puts '-' < digits < upper case < '_' < lower case, and
		// "10" before "9": names that read as numbers must not move first, as a JS object's would.
		const names = ["b", "_x", "9", "B", "a/z", "10", "-dash", "a.txt", "Z9", "a", "0"];
		for (const [i, name] of names.entries()) await attachDoc(admin.secret, twin, name, patterned(i + 1, i + 1));
		const byteOrder = ["-dash", "0", "10", "9", "B", "Z9", "_x", "a", "a.txt", "a/z", "b"];
		const raw = await rawList(admin.secret, twin);
		expect(keysInText(raw)).toEqual(byteOrder);
		const docs = JSON.parse(raw).docs;
		expect(Object.keys(docs).sort()).toEqual([...byteOrder].sort());
		const record = (await call("GET", docPath(twin, "a/z"), { secret: admin.secret })).body;
		expect(docs["a/z"]).toEqual([record.creation_certificate.created_ts, record.updated_ts, 5]);
		// view=list is the default.
		expect(await rawList(admin.secret, twin, "?view=list")).toBe(raw);
		// The tree view keeps byte order at every level.
		await attachDoc(admin.secret, twin, "7/3", patterned(3, 30));
		await attachDoc(admin.secret, twin, "7/12", patterned(3, 31));
		const tree = await rawList(admin.secret, twin, "?view=tree");
		expect(keysInText(tree)).toEqual([
			"-dash",
			"0",
			"10",
			"7/",
			"12",
			"3",
			"9",
			"B",
			"Z9",
			"_x",
			"a",
			"a.txt",
			"a/",
			"z",
			"b",
		]);
		// Written as text where it is built, not parsed by the response schema on the way out:
		// both views must still have the schema's shape.
		for (const text of [raw, tree]) expect(getTwinDocs.response.parse(JSON.parse(text))).toEqual(JSON.parse(text));
		const deleted = await call("DELETE", `${docPath(twin)}?view=tree`, { secret: admin.secret });
		expect(deleteTwinDocs.response.parse(deleted.body)).toEqual(JSON.parse(tree));
	});

	it("nests folders as keys ending in '/' in the tree view, a file and a folder sharing a name", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const [i, name] of ["a", "a/b", "a/c/d.txt", "a/c/e", "top.md", "x/y/z/w/v/u"].entries()) {
			await attachDoc(admin.secret, twin, name, patterned(10 + i, i + 1));
		}
		const tree = await list(admin.secret, twin, "?view=tree");
		const entry = [expect.any(Number), expect.any(Number)];
		expect(tree).toEqual({
			a: [...entry, 10],
			"a/": { b: [...entry, 11], "c/": { "d.txt": [...entry, 12], e: [...entry, 13] } },
			"top.md": [...entry, 14],
			"x/": { "y/": { "z/": { "w/": { "v/": { u: [...entry, 15] } } } } },
		});
		expect(Object.keys(tree)).toEqual(["a", "a/", "top.md", "x/"]);
	});

	it("lists the names a mask matches anywhere, on RE2", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		for (const [i, name] of ["manuals/a.pdf", "manuals/b.txt", "photos/a.jpg", "Manual.pdf", "readme"].entries()) {
			await attachDoc(admin.secret, twin, name, patterned(5, i + 1));
		}
		const masked = async (mask: string) =>
			Object.keys(await list(admin.secret, twin, `?mask=${encodeURIComponent(mask)}`));
		expect(await masked("manual")).toEqual(["manuals/a.pdf", "manuals/b.txt"]);
		expect(await masked("(?i)manual")).toEqual(["Manual.pdf", "manuals/a.pdf", "manuals/b.txt"]);
		expect(await masked("\\.pdf$")).toEqual(["Manual.pdf", "manuals/a.pdf"]);
		expect(await masked("^[a-z]+$")).toEqual(["readme"]);
		expect(await masked("a\\.")).toEqual(["manuals/a.pdf", "photos/a.jpg"]);
		expect(await masked("nothing")).toEqual([]);
		expect(await masked("")).toEqual(["Manual.pdf", "manuals/a.pdf", "manuals/b.txt", "photos/a.jpg", "readme"]);
		// With the tree view.
		expect(await list(admin.secret, twin, `?view=tree&mask=${encodeURIComponent("^photos/")}`)).toEqual({
			"photos/": { "a.jpg": expect.any(Array) },
		});
	});

	it("refuses a mask RE2 cannot run, a mask over 256 characters, another view and unknown parameters with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "x", patterned(3));
		for (const query of [
			"mask=(%3F%3Dx)",
			"mask=(a)%5C1",
			"mask=(",
			"mask=[z-a]",
			`mask=${"a".repeat(257)}`,
			"view=folders",
			"view=",
			"limit=10",
			"mask=a&extra=1",
		]) {
			const res = await call("GET", `${docPath(twin)}?${query}`, { secret: admin.secret });
			expect([query, res.status]).toEqual([query, 400]);
			expectError(res, 400, 400101);
		}
		expect((await call("GET", `${docPath(twin)}?mask=${"a".repeat(256)}`, { secret: admin.secret })).status).toBe(200);
	});

	it("shows every account's docs to whoever sees the twin", async () => {
		const { owner, other, twin } = await sharedTwin();
		await attachDoc(owner.secret, twin, "owners", patterned(3, 1));
		await attachDoc(other.secret, twin, "others", patterned(4, 2));
		for (const secret of [owner.secret, other.secret])
			expect(Object.keys(await list(secret, twin))).toEqual(["others", "owners"]);
	});

	it("answers 404102 for an unknown twin", async () => {
		const admin = await bootstrap();
		expectError(await call("GET", docPath(crypto.randomUUID()), { secret: admin.secret }), 404, 404102);
	});
});

describe("delete_twin_docs", () => {
	it("deletes the docs the caller's account attached, answers them in the view asked, and leaves others' docs", async () => {
		const { owner, other, twin } = await sharedTwin();
		await attachDoc(owner.secret, twin, "o/one", patterned(3, 1));
		await attachDoc(owner.secret, twin, "o/two", patterned(4, 2));
		await attachDoc(other.secret, twin, "theirs", patterned(5, 3));
		const elsewhere = await newTwin(other.secret, { shared: true });
		await attachDoc(other.secret, elsewhere, "kept", patterned(6, 4));
		const theirObject = await docObject(twin, "theirs");
		const res = await call("DELETE", `${docPath(twin)}?view=tree`, { secret: other.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual({ docs: { theirs: [expect.any(Number), expect.any(Number), 5] } });
		expect(Object.keys(await list(owner.secret, twin))).toEqual(["o/one", "o/two"]);
		// Only this twin's: the other twin's doc stays.
		expect(Object.keys(await list(other.secret, elsewhere))).toEqual(["kept"]);
		expect(await docBytes(other.account)).toBe(6);
		expect(await env.DOCS.head(theirObject)).toBeNull();
		const mine = await call("DELETE", `${docPath(twin)}?view=tree`, { secret: owner.secret });
		expect(mine.body).toEqual({
			docs: {
				"o/": { one: [expect.any(Number), expect.any(Number), 3], two: [expect.any(Number), expect.any(Number), 4] },
			},
		});
		expect(await list(owner.secret, twin)).toEqual({});
		expect(await docBytes(owner.account)).toBe(0);
		// Nothing left to delete.
		expect((await call("DELETE", docPath(twin), { secret: owner.secret })).body).toEqual({ docs: {} });
	});

	it("answers in the list view by default; refuses another view and unknown parameters", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f/g", patterned(3));
		expectError(await call("DELETE", `${docPath(twin)}?view=all`, { secret: admin.secret }), 400, 400101);
		expectError(await call("DELETE", `${docPath(twin)}?mask=f`, { secret: admin.secret }), 400, 400101);
		expect(Object.keys(await list(admin.secret, twin))).toEqual(["f/g"]);
		expect((await call("DELETE", docPath(twin), { secret: admin.secret })).body).toEqual({
			docs: { "f/g": [expect.any(Number), expect.any(Number), 3] },
		});
	});
});

describe("get_twin_doc", () => {
	it("answers the record for a name with its '/' as they are or as %2F, decoded once", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const record = await attachDoc(admin.secret, twin, "a/b/c.txt", patterned(7));
		for (const path of ["a/b/c.txt", "a%2Fb%2Fc.txt", "a%2fb/c.txt", "%61/b/c.txt"]) {
			const res = await call("GET", docPath(twin, path), { secret: admin.secret });
			expect([path, res.status]).toEqual([path, 200]);
			expect(res.body).toEqual(record);
		}
		// Decoded once: %252F is a '%2F' in the name, which no name may hold.
		expectError(await call("GET", docPath(twin, "a%252Fb%252Fc.txt"), { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", docPath(twin, "a%2"), { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", docPath(twin, "a/b//c.txt"), { secret: admin.secret }), 400, 400101);
		// The folder is no doc.
		expectError(await call("GET", docPath(twin, "a/b"), { secret: admin.secret }), 404, 404102);
		expectError(await call("GET", docPath(twin, "nope.txt"), { secret: admin.secret }), 404, 404102);
	});

	it("issues a download URL with download=true, valid an hour unless asked otherwise", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const record = await attachDoc(admin.secret, twin, "d/file.bin", patterned(9));
		for (const flag of ["true", "TRUE", "1", "True"]) {
			const before = nowSeconds();
			const res = await call("GET", `${docPath(twin, "d/file.bin")}?download=${flag}`, { secret: admin.secret });
			expect(res.status).toBe(200);
			expect(Object.keys(res.body)).toEqual([
				"creation_certificate",
				"storage_class",
				"content_type",
				"updated_ts",
				"status",
				"download",
			]);
			expect({ ...res.body, download: undefined }).toEqual({ ...record, download: undefined });
			expect(Object.keys(res.body.download)).toEqual(["url", "validity_ts"]);
			expect(res.body.download.url).toMatch(
				new RegExp(`^${BASE}/download/${admin.account}/[0-9a-f-]{36}\\.\\d+\\.[A-Za-z0-9_-]+$`),
			);
			expect(res.body.download.validity_ts).toBeGreaterThanOrEqual(before + 3600 - 1);
			expect(res.body.download.validity_ts).toBeLessThanOrEqual(nowSeconds() + 3600);
		}
		for (const flag of ["false", "0", "FALSE"]) {
			const res = await call("GET", `${docPath(twin, "d/file.bin")}?download=${flag}`, { secret: admin.secret });
			expect(res.body).toEqual(record);
		}
		expectError(
			await call("GET", `${docPath(twin, "d/file.bin")}?download=yes`, { secret: admin.secret }),
			400,
			400101,
		);
		expectError(await call("GET", `${docPath(twin, "d/file.bin")}?other=1`, { secret: admin.secret }), 400, 400101);
	});

	it("takes validity_ts with download=true only, later than now and at most 7 days ahead", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f", patterned(9));
		const path = docPath(twin, "f");
		const week = 7 * 24 * 3600;
		const soon = Math.floor(nowSeconds()) + 120;
		expectError(await call("GET", `${path}?validity_ts=${soon}`, { secret: admin.secret }), 400, 400101);
		expectError(await call("GET", `${path}?download=false&validity_ts=${soon}`, { secret: admin.secret }), 400, 400101);
		const asked = await call("GET", `${path}?download=true&validity_ts=${soon}`, { secret: admin.secret });
		expect(asked.status).toBe(200);
		expect(asked.body.download.validity_ts).toBe(soon);
		const fraction = await call("GET", `${path}?download=true&validity_ts=${soon}.5`, { secret: admin.secret });
		expect(fraction.body.download.validity_ts).toBe(soon + 0.5);
		expect(
			(
				await call("GET", `${path}?download=true&validity_ts=${Math.floor(nowSeconds()) + week - 60}`, {
					secret: admin.secret,
				})
			).status,
		).toBe(200);
		for (const v of [Math.floor(nowSeconds()) - 1, 0, Math.floor(nowSeconds()) + week + 60, "soon", "-5", "1e10", ""]) {
			const res = await call("GET", `${path}?download=true&validity_ts=${v}`, { secret: admin.secret });
			expect([v, res.status]).toEqual([v, 400]);
			expectError(res, 400, 400101);
		}
	});

	it("needs download_doc in the statement for download=true (403101), not for the record", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f", patterned(9));
		const denied = await userWith(admin, { effect: "deny", actions: ["download_doc"] });
		expect((await call("GET", docPath(twin, "f"), { secret: denied.secret })).status).toBe(200);
		expectError(await call("GET", `${docPath(twin, "f")}?download=true`, { secret: denied.secret }), 403, 403101);
		const reader = await userWith(admin, { effect: "allow", actions: ["get_twin_doc"] });
		expect((await call("GET", docPath(twin, "f"), { secret: reader.secret })).status).toBe(200);
		expectError(await call("GET", `${docPath(twin, "f")}?download=true`, { secret: reader.secret }), 403, 403101);
		const downloader = await userWith(admin, { effect: "allow", actions: ["get_twin_doc", "download_doc"] });
		const url = await downloadUrl(downloader.secret, twin, "f");
		expect((await download(url)).bytes).toEqual(patterned(9));
		// get_twin_doc itself is needed first.
		const blind = await userWith(admin, { effect: "allow", actions: ["download_doc"] });
		expectError(await call("GET", `${docPath(twin, "f")}?download=true`, { secret: blind.secret }), 403, 403101);
	});

	it("answers 500102 for download=true without PUBLIC_URL; the record alone still answers", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const record = await attachDoc(admin.secret, twin, "f", patterned(9));
		const res = await call("GET", `${docPath(twin, "f")}?download=true`, {
			secret: admin.secret,
			env: { PUBLIC_URL: "" },
		});
		expectError(res, 500, 500102);
		expect(res.body.description).toContain("PUBLIC_URL");
		expect((await call("GET", docPath(twin, "f"), { secret: admin.secret, env: { PUBLIC_URL: "" } })).body).toEqual(
			record,
		);
	});

	it("shows another account's doc, and issues a URL for it on the caller's account", async () => {
		const { owner, other, twin } = await sharedTwin();
		const record = await attachDoc(owner.secret, twin, "owners.txt", patterned(11));
		expect((await call("GET", docPath(twin, "owners.txt"), { secret: other.secret })).body).toEqual(record);
		const url = await downloadUrl(other.secret, twin, "owners.txt");
		expect(url.startsWith(`${BASE}/download/${other.account}/`)).toBe(true);
		expect((await download(url)).bytes).toEqual(patterned(11));
	});
});

describe("update_twin_doc", () => {
	it("replaces the description with an object, removes it with null, and changes nothing when absent", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const attached = await attachDoc(admin.secret, twin, "f.txt", patterned(5), { description: { v: 1, keep: "x" } });
		const patch = (body: unknown) => call("PATCH", docPath(twin, "f.txt"), { secret: admin.secret, body });

		const replaced = await patch({ description: { v: 2 } });
		expect(replaced.status).toBe(200);
		expect(replaced.body.description).toEqual({ v: 2 });
		expect(Object.keys(replaced.body)).toEqual([
			"creation_certificate",
			"storage_class",
			"content_type",
			"updated_ts",
			"description",
			"status",
		]);
		expect(replaced.body.creation_certificate).toEqual(attached.creation_certificate);
		expect(replaced.body.updated_ts).toBeGreaterThanOrEqual(attached.updated_ts);

		// Absent: nothing changes, updated_ts included.
		await new Promise((resolve) => setTimeout(resolve, 5));
		for (const body of [{}, undefined]) {
			const same = await patch(body);
			expect(same.status).toBe(200);
			expect(same.body).toEqual(replaced.body);
		}
		expect((await call("GET", docPath(twin, "f.txt"), { secret: admin.secret })).body).toEqual(replaced.body);

		// An empty object is kept as one; null removes the key.
		const emptied = await patch({ description: {} });
		expect(emptied.body.description).toEqual({});
		expect(emptied.body.updated_ts).toBeGreaterThan(replaced.body.updated_ts);
		const removed = await patch({ description: null });
		expect(removed.body).not.toHaveProperty("description");
		expect(removed.body.updated_ts).toBeGreaterThanOrEqual(emptied.body.updated_ts);
		expect((await call("GET", docPath(twin, "f.txt"), { secret: admin.secret })).body).toEqual(removed.body);
		// The listing shows the new updated_ts.
		const listed = await list(admin.secret, twin);
		expect(listed["f.txt"]).toEqual([attached.creation_certificate.created_ts, removed.body.updated_ts, 5]);
	});

	it("refuses storage_class, other fields and malformed descriptions with 400101", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const attached = await attachDoc(admin.secret, twin, "f", patterned(5));
		for (const body of [
			{ storage_class: "cost_optimized" },
			{ storage_class: "access_optimized" },
			{ description: {}, name: "g" },
			{ description: "x" },
			{ description: [1] },
			{ hash: "0".repeat(64) },
			{ description: { BadKey: 1 } },
			{ description: { big: "x".repeat(33 * 1024) } },
		]) {
			expectError(await call("PATCH", docPath(twin, "f"), { secret: admin.secret, body }), 400, 400101);
		}
		expect((await call("GET", docPath(twin, "f"), { secret: admin.secret })).body).toEqual(attached);
	});

	it("answers 404102 for an unknown name and 403103 for another account's doc, which stays as it was", async () => {
		const { owner, other, twin } = await sharedTwin();
		const record = await attachDoc(owner.secret, twin, "owners", patterned(5), { description: { mine: true } });
		expectError(
			await call("PATCH", docPath(twin, "missing"), { secret: other.secret, body: { description: {} } }),
			404,
			404102,
		);
		const refused = await call("PATCH", docPath(twin, "owners"), {
			secret: other.secret,
			body: { description: { stolen: true } },
		});
		expectError(refused, 403, 403103);
		// Even a change of nothing.
		expectError(await call("PATCH", docPath(twin, "owners"), { secret: other.secret, body: {} }), 403, 403103);
		expect((await call("GET", docPath(twin, "owners"), { secret: owner.secret })).body).toEqual(record);
	});

	it("needs update_twin_doc in the statement", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f", patterned(5));
		const user = await userWith(admin, { effect: "deny", actions: ["update_twin_doc"] });
		expectError(
			await call("PATCH", docPath(twin, "f"), { secret: user.secret, body: { description: {} } }),
			403,
			403101,
		);
	});
});

describe("delete_twin_doc", () => {
	it("answers the record as it was, deletes the row and its file, and gives the bytes back", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const record = await attachDoc(admin.secret, twin, "g/h.txt", patterned(21), { description: { a: 1 } });
		const object = await docObject(twin, "g/h.txt");
		expect(await docBytes(admin.account)).toBe(21);
		const res = await call("DELETE", docPath(twin, "g%2Fh.txt"), { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual(record);
		expect(await env.DOCS.head(object)).toBeNull();
		expect(await docBytes(admin.account)).toBe(0);
		expectError(await call("GET", docPath(twin, "g/h.txt"), { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", docPath(twin, "g/h.txt"), { secret: admin.secret }), 404, 404102);
		expect(await list(admin.secret, twin)).toEqual({});
		// The name is free again.
		await attachDoc(admin.secret, twin, "g/h.txt", patterned(3));
	});

	it("answers 403103 for another account's doc, which stays", async () => {
		const { owner, other, twin } = await sharedTwin();
		const record = await attachDoc(owner.secret, twin, "owners", patterned(5));
		expectError(await call("DELETE", docPath(twin, "owners"), { secret: other.secret }), 403, 403103);
		expect((await call("GET", docPath(twin, "owners"), { secret: other.secret })).body).toEqual(record);
		expect(await env.DOCS.head(await docObject(twin, "owners"))).not.toBeNull();
		// The twin's owner may not delete the other account's doc either.
		const theirs = await attachDoc(other.secret, twin, "theirs", patterned(6));
		expectError(await call("DELETE", docPath(twin, "theirs"), { secret: owner.secret }), 403, 403103);
		expectError(
			await call("PATCH", docPath(twin, "theirs"), { secret: owner.secret, body: { description: {} } }),
			403,
			403103,
		);
		expect((await call("GET", docPath(twin, "theirs"), { secret: owner.secret })).body).toEqual(theirs);
	});

	it("lets any user of the attaching account delete its doc", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "f", patterned(5));
		const colleague = await userWith(admin, { effect: "deny", actions: [] });
		expect((await call("DELETE", docPath(twin, "f"), { secret: colleague.secret })).status).toBe(200);
	});
});

describe("docs on a terminated twin", () => {
	it("stay readable and writable", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attachDoc(admin.secret, twin, "before", patterned(8, 1));
		await attachDoc(admin.secret, twin, "gone", patterned(4, 2));
		expect((await call("DELETE", `/twins/${twin}`, { secret: admin.secret })).status).toBe(200);
		expect((await call("GET", `/twins/${twin}`, { secret: admin.secret })).body.status).toBe("terminated");
		expect(Object.keys(await list(admin.secret, twin))).toEqual(["before", "gone"]);
		const url = await downloadUrl(admin.secret, twin, "before");
		expect((await download(url)).bytes).toEqual(patterned(8, 1));
		const updated = await call("PATCH", docPath(twin, "before"), {
			secret: admin.secret,
			body: { description: { after: "end" } },
		});
		expect(updated.status).toBe(200);
		expect(updated.body.description).toEqual({ after: "end" });
		expect((await call("DELETE", docPath(twin, "gone"), { secret: admin.secret })).status).toBe(200);
		await attachDoc(admin.secret, twin, "after", patterned(2, 3));
		expect(Object.keys(await list(admin.secret, twin))).toEqual(["after", "before"]);
		expect((await call("DELETE", docPath(twin), { secret: admin.secret })).status).toBe(200);
		expect(await list(admin.secret, twin)).toEqual({});
	});
});

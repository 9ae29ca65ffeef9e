import { describe, expect, it } from "vitest";
import { idOf } from "../support/shards";
import { call, fingerprint } from "../support/requests";
import { type Account, bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { attachDoc, docPath, patterned, uploaded, uploadObject } from "./helpers";

// A twin the caller cannot see answers 404102 on every /twins/{twin}/docs… route exactly as a
// twin that does not exist: status, body and every header, Server-Timing's figures included,
// whatever else the request holds (docs/files.md "Rules"). Compared whole, as
// test/reliability/isolation.test.ts does for the other routes.

type Attempt = { method: string; path: string; body?: unknown };

// Every docs route, with good and bad input: the twin is found before the query, the body
// and the handlers are looked at. `handler` is one of the caller's own uploads, `foreign`
// another user's.
function attempts(twin: string, handler: string, foreign: string): Attempt[] {
	const docs = docPath(twin);
	const doc = docPath(twin, "hidden.txt");
	return [
		{ method: "POST", path: docs, body: { docs: { "new.txt": { handler } } } },
		{ method: "POST", path: docs, body: { docs: { "hidden.txt": { handler, hash: "0".repeat(64) } } } },
		{ method: "POST", path: docs, body: { docs: { "new.txt": { handler: foreign } } } },
		{ method: "POST", path: docs, body: { docs: {} } },
		{ method: "POST", path: docs, body: { docs: { "bad name!": { handler } }, extra: true } },
		{ method: "POST", path: docs, body: "not json" },
		{ method: "GET", path: docs },
		{ method: "GET", path: `${docs}?view=tree&mask=hidden` },
		{ method: "GET", path: `${docs}?mask=(%3F%3Dx)` },
		{ method: "GET", path: `${docs}?view=bogus&unknown=1` },
		{ method: "DELETE", path: docs },
		{ method: "DELETE", path: `${docs}?view=bogus` },
		{ method: "GET", path: doc },
		{ method: "GET", path: docPath(twin, "hidden%2Etxt") },
		{ method: "GET", path: docPath(twin, "missing/doc.txt") },
		{ method: "GET", path: `${doc}?download=true` },
		{ method: "GET", path: `${doc}?download=true&validity_ts=1` },
		{ method: "GET", path: `${doc}?validity_ts=1` },
		{ method: "GET", path: `${doc}?download=maybe` },
		{ method: "PATCH", path: doc, body: { description: { x: 1 } } },
		{ method: "PATCH", path: doc, body: { storage_class: "cost_optimized" } },
		{ method: "PATCH", path: doc, body: "not json" },
		{ method: "PATCH", path: docPath(twin, "missing") },
		{ method: "DELETE", path: doc },
		{ method: "DELETE", path: `${doc}?unknown=1` },
	];
}

// Each attempt on the hidden twin against the same on a twin that exists nowhere.
async function compareWithAbsent(caller: Account, hidden: string, foreign: string) {
	const { handler } = await uploaded(caller.secret, patterned(10, 9));
	// Of the hidden twin's bucket: the absence compared is in the database the twin's id names.
	const absent = idOf(hidden);
	const swap = (text: string) => text.replaceAll(hidden, absent);
	const differences: unknown[] = [];
	const pairs = attempts(hidden, handler, foreign).map(
		(attempt, i) => [attempt, attempts(absent, handler, foreign)[i]] as const,
	);
	for (const [onHidden, onAbsent] of pairs) {
		const a = await call(onHidden.method, onHidden.path, { secret: caller.secret, body: onHidden.body });
		const b = await call(onAbsent.method, onAbsent.path, { secret: caller.secret, body: onAbsent.body });
		expect([onHidden.method, onHidden.path, a.status, a.body?.subcode]).toEqual([
			onHidden.method,
			onHidden.path,
			404,
			404102,
		]);
		// Collected, so that one difference does not hide the others behind it.
		if (JSON.stringify(fingerprint(a, swap)) !== JSON.stringify(fingerprint(b))) {
			differences.push({ attempt: onHidden, hidden: fingerprint(a, swap), absent: fingerprint(b) });
		}
	}
	expect(differences).toEqual([]);
	expect(pairs.length).toBeGreaterThanOrEqual(25);
	// None of it consumed the caller's handler.
	expect(await uploadObject(handler)).toEqual(expect.any(String));
}

// What the owner of the hidden twin had is still there, untouched.
async function unchanged(owner: Account, twin: string, record: unknown) {
	const listed = await call("GET", docPath(twin), { secret: owner.secret });
	expect(Object.keys(listed.body.docs)).toEqual(["hidden.txt"]);
	expect((await call("GET", docPath(twin, "hidden.txt"), { secret: owner.secret })).body).toEqual(record);
}

describe("a twin the caller cannot see", () => {
	it("answers as an absent twin on every docs route: another account's twin", async () => {
		const owner = await bootstrap();
		const twin = await newTwin(owner.secret);
		const record = await attachDoc(owner.secret, twin, "hidden.txt", patterned(12, 1));
		const ownersUpload = await uploaded(owner.secret, patterned(10, 2));
		const stranger = await bootstrap();
		await compareWithAbsent(stranger, twin, ownersUpload.handler);
		await unchanged(owner, twin, record);
		expect(await uploadObject(ownersUpload.handler)).toEqual(expect.any(String));
	});

	it("answers as an absent twin on every docs route: a twin of the caller's account its role's twin rule hides", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret, { open: false });
		const record = await attachDoc(admin.secret, twin, "hidden.txt", patterned(12, 1));
		const reader = await userWithRules(admin, { twin: "TWIN.open == true" });
		// The rule shows the reader an open twin and its docs: it hides only what it must.
		const open = await newTwin(admin.secret, { open: true });
		await attachDoc(admin.secret, open, "seen.txt", patterned(3, 3));
		expect(Object.keys((await call("GET", docPath(open), { secret: reader.secret })).body.docs)).toEqual(["seen.txt"]);
		const adminsUpload = await uploaded(admin.secret, patterned(10, 2));
		await compareWithAbsent(reader, twin, adminsUpload.handler);
		await unchanged(admin, twin, record);
	});
});

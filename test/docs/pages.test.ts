import { describe, expect, it } from "vitest";
import { call, d1Cost, expectError } from "../support/requests";
import { bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { docPath } from "./helpers";
import { dbOf, idOf } from "../support/shards";

// Each account attaches up to MAX_TWIN_DOCS docs to a twin (docs/files.md), so a twin may hold
// more than one answer of get_twin_docs: a page examines 1000 names, and `cursor` comes while
// more follow.

// `count` docs of `account` on `twin`, written straight into D1 (the twin owner's), named
// `<prefix><i>`.
async function seedDocs(twin: string, account: string, prefix: string, count: number) {
	const db = dbOf(twin);
	const statement = db.prepare(
		`INSERT INTO docs (uuid, twin, name, account, object, size, hash, storage_class, description, created_ts, updated_ts)
		VALUES (?, ?, ?, ?, ?, 1, ?, 'access_optimized', NULL, 1, 1)`,
	);
	const names = Array.from({ length: count }, (_, i) => `${prefix}${String(i).padStart(4, "0")}`);
	for (let i = 0; i < count; i += 500) {
		await db.batch(
			names
				.slice(i, i + 500)
				.map((name) =>
					statement.bind(idOf(account), twin, name, account, `objects/${crypto.randomUUID()}`, "0".repeat(64)),
				),
		);
	}
	return names;
}

describe("get_twin_docs over more docs than a page", () => {
	it("answers 1000 names a page with a cursor while more follow; a walk answers every doc once", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const twin = await newTwin(admin.secret);
		const all = [
			...(await seedDocs(twin, admin.account, "a", 800)),
			...(await seedDocs(twin, other.account, "b", 700)),
		].sort();

		const first = await call("GET", docPath(twin), { secret: admin.secret });
		expect(first.status).toBe(200);
		expect(Object.keys(first.body.docs)).toEqual(all.slice(0, 1000));
		expect(first.body.cursor).toEqual(expect.any(String));
		// Rows read: the page and the row after it, the credential and the twin.
		expect(d1Cost(first, "rows_read")).toBeLessThanOrEqual(1001 + 5);
		const second = await call("GET", `${docPath(twin)}?cursor=${encodeURIComponent(first.body.cursor)}`, {
			secret: admin.secret,
		});
		expect(Object.keys(second.body.docs)).toEqual(all.slice(1000));
		expect(Object.keys(second.body)).toEqual(["docs"]);

		// A mask filters each page; the cursor still walks the names.
		const masked = await call("GET", `${docPath(twin)}?mask=${encodeURIComponent("7$")}&view=tree`, {
			secret: admin.secret,
		});
		expect(Object.keys(masked.body.docs)).toEqual(all.slice(0, 1000).filter((name) => name.endsWith("7")));
		const rest = await call(
			"GET",
			`${docPath(twin)}?mask=${encodeURIComponent("7$")}&cursor=${encodeURIComponent(masked.body.cursor)}`,
			{ secret: admin.secret },
		);
		expect(Object.keys(rest.body.docs)).toEqual(all.slice(1000).filter((name) => name.endsWith("7")));
	});

	it("answers no cursor for a twin whose docs fit one page, as the original does", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await seedDocs(twin, admin.account, "a", 1000);
		const res = await call("GET", docPath(twin), { secret: admin.secret });
		expect(Object.keys(res.body)).toEqual(["docs"]);
		expect(Object.keys(res.body.docs)).toHaveLength(1000);
	});

	it("refuses a cursor of another twin, another user or none of ours with 400104", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		const another = await newTwin(admin.secret);
		await seedDocs(twin, admin.account, "a", 1001);
		const { cursor } = (await call("GET", docPath(twin), { secret: admin.secret })).body;
		const colleague = await userWithRules(admin, {});
		for (const [secret, path] of [
			[admin.secret, docPath(another)],
			[colleague.secret, docPath(twin)],
		]) {
			expectError(await call("GET", `${path}?cursor=${encodeURIComponent(cursor)}`, { secret }), 400, 400104);
		}
		expectError(await call("GET", `${docPath(twin)}?cursor=made-up`, { secret: admin.secret }), 400, 400104);
	});
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { type Account, bootstrapOn, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { dbOf, idOf } from "../support/shards";
import { homeOf } from "../../src/db/shards";
import { failingWrites, loggedErrors } from "../support/faults";
import { fireAccountAlarm, objectEnv } from "../support/objects";
import {
	attachDoc,
	docBytes,
	docObject,
	docPath,
	download,
	downloadUrl,
	patterned,
	uploaded,
	uploadObject,
} from "./helpers";

// Docs attached on another account's twin when the two accounts' rows live in two databases
// (docs/files.md "Docs on another database"): the doc's row in the twin owner's database, the
// upload, the garbage and the bytes in the attaching account's. Attach and delete commit in the
// attacher's database first, with a move the attacher's object finishes in the owner's before
// answering; a stop between the two is finished, or undone, by the object's alarm.

type Binding = "DB_0" | "DB_1";
const other = (binding: Binding): Binding => (binding === "DB_0" ? "DB_1" : "DB_0");

// A twin described `{shared: true}` of an account on `ownerOn`, and a user of an account on the
// other database whose role sees it.
async function apart(ownerOn: Binding) {
	const owner = await bootstrapOn(ownerOn);
	const twin = await newTwin(owner.secret, { shared: true });
	const attacher = await userWithRules(await bootstrapOn(other(ownerOn)), { twin: "TWIN.shared == true" });
	return { owner, attacher, twin };
}

const attach = (secret: string, twin: string, docs: Record<string, unknown>) =>
	call("POST", docPath(twin), { secret, body: { docs } });

const names = async (secret: string, twin: string) =>
	Object.keys((await call("GET", docPath(twin), { secret })).body.docs);

// The moves of the account not yet finished, in its own database.
async function movesOf(account: string): Promise<number> {
	const row = await dbOf(account)
		.prepare("SELECT count(*) AS n FROM doc_outbox WHERE account = ?")
		.bind(account)
		.first<{ n: number }>();
	return row!.n;
}

async function garbageOf(account: string): Promise<string[]> {
	const { results } = await dbOf(account)
		.prepare("SELECT object FROM doc_garbage WHERE account = ?")
		.bind(account)
		.all<{ object: string }>();
	return results.map((row) => row.object);
}

const bindingOf = (account: Account) => homeOf(env, account.account) as Binding;

// The owner's database failing the attacher's object's writes there (reads pass): a move
// commits in the attacher's database and stops before the owner's. Answers the undoing.
const ownerUnreachable = (attacher: Account, owner: Account) => {
	const binding = bindingOf(owner);
	return objectEnv(attacher.account, { [binding]: failingWrites(env[binding]) });
};

// D1 that runs `first` before the first batch written to it: another account's write that
// commits between a write's checks and its own batch.
function racedBy(db: D1Database, first: D1PreparedStatement): D1Database {
	let pending = true;
	return new Proxy(db, {
		get(target, property) {
			if (property === "batch") {
				return async (statements: D1PreparedStatement[]) => {
					if (pending) {
						pending = false;
						await first.run();
					}
					return target.batch(statements);
				};
			}
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

describe.each(["DB_0", "DB_1"] as const)(
	"docs on a twin of an account on %s, attached from the other database",
	(ownerOn) => {
		it("are the twin's: the owner lists and reads them, both download them, their row is in the owner's database", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			const bytes = patterned(321, 7);
			const up = await uploaded(attacher.secret, bytes);
			const res = await attach(attacher.secret, twin, { "manual.pdf": { handler: up.handler } });
			expect(res.status, JSON.stringify(res.body)).toBe(201);
			const record = res.body.docs["manual.pdf"];
			expect(record.creation_certificate).toMatchObject({ size: 321, hash: up.hash, creator: attacher.account });
			expect(await names(owner.secret, twin)).toEqual(["manual.pdf"]);
			expect((await call("GET", docPath(twin, "manual.pdf"), { secret: owner.secret })).body).toEqual(record);
			// The upload is consumed, its bytes now the doc's, counted in the attacher's account only.
			expect(await uploadObject(up.handler)).toBeUndefined();
			expect(await docBytes(attacher.account)).toBe(321);
			expect(await docBytes(owner.account)).toBe(0);
			expect(await movesOf(attacher.account)).toBe(0);
			const inOwners = await dbOf(twin).prepare("SELECT count(*) AS n FROM docs WHERE twin = ?").bind(twin).first();
			const inAttachers = await dbOf(attacher.account)
				.prepare("SELECT count(*) AS n FROM docs WHERE twin = ?")
				.bind(twin)
				.first();
			expect([inOwners, inAttachers]).toEqual([{ n: 1 }, { n: 0 }]);
			// A download URL names the downloader's account, on either database; it finds the doc.
			for (const reader of [owner, attacher]) {
				const got = await download(await downloadUrl(reader.secret, twin, "manual.pdf"));
				expect(got.status).toBe(200);
				expect(got.bytes).toEqual(bytes);
			}
		});

		it("hold a name once on the twin across both accounts: a refused attach leaves the uploads and the bytes as they were", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			await attachDoc(owner.secret, twin, "owners.txt", patterned(4, 1));
			const mine = await uploaded(attacher.secret, patterned(9, 2));
			const extra = await uploaded(attacher.secret, patterned(5, 3));
			const key = await uploadObject(mine.handler);
			expect(await docBytes(attacher.account)).toBe(14);
			const refused = await attach(attacher.secret, twin, {
				"free.txt": { handler: extra.handler },
				"owners.txt": { handler: mine.handler },
			});
			expectError(refused, 409, 409101);
			expect(refused.body.details).toEqual([{ path: "docs.owners.txt", message: expect.any(String) }]);
			expect(await names(owner.secret, twin)).toEqual(["owners.txt"]);
			expect(await uploadObject(mine.handler)).toBe(key);
			expect(await docBytes(attacher.account)).toBe(14);
			// The attacher's name is the twin's too: the owner cannot take it.
			expect((await attach(attacher.secret, twin, { "mine.txt": { handler: mine.handler } })).status).toBe(201);
			const owners = await uploaded(owner.secret, patterned(3, 4));
			expectError(await attach(owner.secret, twin, { "mine.txt": { handler: owners.handler } }), 409, 409101);
			expect(await uploadObject(owners.handler)).toEqual(expect.any(String));
			expect((await names(owner.secret, twin)).sort()).toEqual(["mine.txt", "owners.txt"]);
			expect(await docBytes(attacher.account)).toBe(14);
		});

		it("go to one of the two accounts racing for a name; the other's upload and bytes stay as they were", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			const theirs = await uploaded(owner.secret, patterned(6, 1));
			const mine = await uploaded(attacher.secret, patterned(7, 2));
			const answers = await Promise.all([
				attach(owner.secret, twin, { same: { handler: theirs.handler } }),
				attach(attacher.secret, twin, { same: { handler: mine.handler } }),
			]);
			expect(answers.map((res) => res.status).sort()).toEqual([201, 409]);
			const [winner, loser, losing] =
				answers[0].status === 201 ? [owner, attacher, mine] : ([attacher, owner, theirs] as const);
			const doc = await call("GET", docPath(twin, "same"), { secret: loser.secret });
			expect(doc.body.creation_certificate.creator).toBe(winner.account);
			expect(await uploadObject(losing.handler)).toEqual(expect.any(String));
			expect(await docBytes(loser.account)).toBe(losing === mine ? 7 : 6);
			expect(await movesOf(attacher.account)).toBe(0);
			expect((await attach(loser.secret, twin, { other: { handler: losing.handler } })).status).toBe(201);
		});

		it("are refused by the owner's database when the name was taken after the checks: undone before the answer", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			const up = await uploaded(attacher.secret, patterned(8, 3));
			const key = await uploadObject(up.handler);
			// The owner's doc lands between the attacher's checks and its docs, as a concurrent write would.
			const binding = bindingOf(owner);
			const taken = env[binding]
				.prepare(
					"INSERT INTO docs (uuid, twin, name, account, object, size, hash, storage_class, description, created_ts, updated_ts) VALUES (?, ?, 'late', ?, ?, 1, ?, 'access_optimized', NULL, 1, 1)",
				)
				.bind(idOf(owner.account), twin, owner.account, `objects/${crypto.randomUUID()}`, "0".repeat(64));
			await objectEnv(attacher.account, { [binding]: racedBy(env[binding], taken) });
			const res = await attach(attacher.secret, twin, { late: { handler: up.handler } });
			expectError(res, 409, 409101);
			expect(res.body.details).toEqual([{ path: "docs.late", message: expect.any(String) }]);
			expect(await uploadObject(up.handler)).toBe(key);
			expect(await docBytes(attacher.account)).toBe(8);
			expect(await movesOf(attacher.account)).toBe(0);
			const doc = await call("GET", docPath(twin, "late"), { secret: attacher.secret });
			expect(doc.body.creation_certificate.creator).toBe(owner.account);
			expect((await attach(attacher.secret, twin, { early: { handler: up.handler } })).status).toBe(201);
		});

		it("are changed by the attacher only, in the owner's database", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			await attachDoc(attacher.secret, twin, "notes.txt", patterned(3));
			const res = await call("PATCH", docPath(twin, "notes.txt"), {
				secret: attacher.secret,
				body: { description: { lang: "de" } },
			});
			expect(res.status).toBe(200);
			expect(res.body.description).toEqual({ lang: "de" });
			expect((await call("GET", docPath(twin, "notes.txt"), { secret: owner.secret })).body).toEqual(res.body);
			expectError(
				await call("PATCH", docPath(twin, "notes.txt"), { secret: owner.secret, body: { description: null } }),
				403,
				403103,
			);
			expectError(await call("DELETE", docPath(twin, "notes.txt"), { secret: owner.secret }), 403, 403103);
		});

		it("are deleted by the attacher, one or all: bytes given back, objects deleted, the owner's docs kept", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			const record = await attachDoc(attacher.secret, twin, "a", patterned(10, 1), { description: { k: 1 } });
			await attachDoc(attacher.secret, twin, "b/c", patterned(20, 2));
			await attachDoc(owner.secret, twin, "owners", patterned(30, 3));
			const [a, c, owners] = await Promise.all(["a", "b/c", "owners"].map((name) => docObject(twin, name)));
			const url = await downloadUrl(owner.secret, twin, "a");
			expect(await docBytes(attacher.account)).toBe(30);

			const one = await call("DELETE", docPath(twin, "a"), { secret: attacher.secret });
			expect(one.status).toBe(200);
			expect(one.body).toEqual(record);
			expect(await docBytes(attacher.account)).toBe(20);
			expect(await env.DOCS.head(a)).toBeNull();
			expectError(await download(url), 404, 404171);

			const all = await call("DELETE", `${docPath(twin)}?view=tree`, { secret: attacher.secret });
			expect(all.status).toBe(200);
			expect(all.body).toEqual({ docs: { "b/": { c: [expect.any(Number), expect.any(Number), 20] } } });
			expect(await docBytes(attacher.account)).toBe(0);
			expect(await env.DOCS.head(c)).toBeNull();
			expect(await garbageOf(attacher.account)).toEqual([]);
			expect(await movesOf(attacher.account)).toBe(0);
			expect(await names(owner.secret, twin)).toEqual(["owners"]);
			expect(await env.DOCS.head(owners)).not.toBeNull();
			expect(await docBytes(owner.account)).toBe(30);
			// The names are free again, for either account.
			await attachDoc(owner.secret, twin, "a", patterned(1));
			await attachDoc(attacher.secret, twin, "b/c", patterned(2));
		});

		it("count MAX_TWIN_DOCS per attaching account on the owner's database", async () => {
			const { owner, attacher, twin } = await apart(ownerOn);
			await objectEnv(attacher.account, { MAX_TWIN_DOCS: "2" });
			await attachDoc(owner.secret, twin, "o1", patterned(1));
			await attachDoc(attacher.secret, twin, "a1", patterned(1));
			const [one, two] = await Promise.all([
				uploaded(attacher.secret, patterned(2)),
				uploaded(attacher.secret, patterned(3)),
			]);
			expectError(
				await attach(attacher.secret, twin, { a2: { handler: one.handler }, a3: { handler: two.handler } }),
				409,
				409175,
			);
			expect(await uploadObject(one.handler)).toEqual(expect.any(String));
			expect((await attach(attacher.secret, twin, { a2: { handler: one.handler } })).status).toBe(201);
		});
	},
);

describe("a stop between a move's two commits", () => {
	it("leaves an attach for the alarm to finish: the doc appears, the upload stays consumed", async () => {
		const logged = loggedErrors();
		const { owner, attacher, twin } = await apart("DB_1");
		const bytes = patterned(77, 4);
		const up = await uploaded(attacher.secret, bytes);
		const reachable = await ownerUnreachable(attacher, owner);
		const res = await attach(attacher.secret, twin, { late: { handler: up.handler } });
		expect(res.status).toBe(500);
		expect(logged).toHaveBeenCalledWith(expect.stringContaining("injected fault"));
		// Committed in the attacher's database only: the upload is consumed, the move waits.
		expect(await names(owner.secret, twin)).toEqual([]);
		expect(await uploadObject(up.handler)).toBeUndefined();
		expect(await movesOf(attacher.account)).toBe(1);
		expect(await docBytes(attacher.account)).toBe(77);

		await reachable();
		expect(await fireAccountAlarm(attacher.account)).toBe(true);
		expect(await names(owner.secret, twin)).toEqual(["late"]);
		expect(await movesOf(attacher.account)).toBe(0);
		expect(await docBytes(attacher.account)).toBe(77);
		const got = await download(await downloadUrl(owner.secret, twin, "late"));
		expect(got.bytes).toEqual(bytes);
	});

	it("leaves an attach the owner's database then refuses for the alarm to undo: the upload back as it was", async () => {
		loggedErrors();
		const { owner, attacher, twin } = await apart("DB_0");
		const up = await uploaded(attacher.secret, patterned(12, 5));
		const key = await uploadObject(up.handler);
		const reachable = await ownerUnreachable(attacher, owner);
		expect((await attach(attacher.secret, twin, { contested: { handler: up.handler } })).status).toBe(500);
		await reachable();
		// Meanwhile the owner takes the name.
		await attachDoc(owner.secret, twin, "contested", patterned(3, 6));

		expect(await fireAccountAlarm(attacher.account)).toBe(true);
		expect(await movesOf(attacher.account)).toBe(0);
		expect(await uploadObject(up.handler)).toBe(key);
		expect(await docBytes(attacher.account)).toBe(12);
		const doc = await call("GET", docPath(twin, "contested"), { secret: attacher.secret });
		expect(doc.body.creation_certificate.creator).toBe(owner.account);
		// The handler attaches again, under a free name.
		expect((await attach(attacher.secret, twin, { free: { handler: up.handler } })).status).toBe(201);
	});

	it("is finished by the account's next doc write before its own", async () => {
		loggedErrors();
		const { owner, attacher, twin } = await apart("DB_1");
		const first = await uploaded(attacher.secret, patterned(5, 1));
		const second = await uploaded(attacher.secret, patterned(6, 2));
		const reachable = await ownerUnreachable(attacher, owner);
		expect((await attach(attacher.secret, twin, { first: { handler: first.handler } })).status).toBe(500);
		await reachable();
		expect((await attach(attacher.secret, twin, { second: { handler: second.handler } })).status).toBe(201);
		expect(await names(owner.secret, twin)).toEqual(["first", "second"]);
		expect(await movesOf(attacher.account)).toBe(0);
	});

	it("leaves a delete for the alarm to finish, stopped before the owner's database or after it", async () => {
		loggedErrors();
		const { owner, attacher, twin } = await apart("DB_0");
		await attachDoc(attacher.secret, twin, "before", patterned(10, 1));
		await attachDoc(attacher.secret, twin, "after", patterned(20, 2));
		const [before, after] = await Promise.all(["before", "after"].map((name) => docObject(twin, name)));

		// Stopped before the owner's database: the doc stays, whole, until the alarm.
		const reachable = await ownerUnreachable(attacher, owner);
		expect((await call("DELETE", docPath(twin, "before"), { secret: attacher.secret })).status).toBe(500);
		expect(await names(owner.secret, twin)).toEqual(["after", "before"]);
		expect(await env.DOCS.head(before)).not.toBeNull();
		expect(await docBytes(attacher.account)).toBe(30);
		await reachable();
		expect(await fireAccountAlarm(attacher.account)).toBe(true);
		expect(await names(owner.secret, twin)).toEqual(["after"]);
		expect(await docBytes(attacher.account)).toBe(20);
		expect(await env.DOCS.head(before)).toBeNull();

		// Stopped after it: the doc is gone at once, its bytes and object until the alarm.
		const home = bindingOf(attacher);
		const restore = await objectEnv(attacher.account, { [home]: failingWrites(env[home], 1) });
		expect((await call("DELETE", docPath(twin, "after"), { secret: attacher.secret })).status).toBe(500);
		expect(await names(owner.secret, twin)).toEqual([]);
		expect(await docBytes(attacher.account)).toBe(20);
		expect(await env.DOCS.head(after)).not.toBeNull();
		expect(await movesOf(attacher.account)).toBe(1);
		await restore();
		expect(await fireAccountAlarm(attacher.account)).toBe(true);
		expect(await docBytes(attacher.account)).toBe(0);
		expect(await env.DOCS.head(after)).toBeNull();
		expect(await garbageOf(attacher.account)).toEqual([]);
		expect(await movesOf(attacher.account)).toBe(0);
	});
});

describe("a twin on another database the caller cannot see", () => {
	it("answers every docs route exactly as an absent twin on that database", async () => {
		const owner = await bootstrapOn("DB_1");
		const twin = await newTwin(owner.secret);
		await attachDoc(owner.secret, twin, "hidden.txt", patterned(4));
		const stranger = await bootstrapOn("DB_0");
		const { handler } = await uploaded(stranger.secret, patterned(5));
		const absent = idOf(owner.account);
		const routes = (on: string) => [
			{ method: "POST", path: docPath(on), body: { docs: { "hidden.txt": { handler } } } },
			{ method: "GET", path: docPath(on) },
			{ method: "DELETE", path: docPath(on) },
			{ method: "GET", path: `${docPath(on, "hidden.txt")}?download=true` },
			{ method: "PATCH", path: docPath(on, "hidden.txt"), body: { description: {} } },
			{ method: "DELETE", path: docPath(on, "hidden.txt") },
		];
		const hidden = routes(twin);
		const swap = (text: string) => text.replaceAll(twin, absent);
		for (const [i, attempt] of routes(absent).entries()) {
			const a = await call(hidden[i]!.method, hidden[i]!.path, { secret: stranger.secret, body: hidden[i]!.body });
			const b = await call(attempt.method, attempt.path, { secret: stranger.secret, body: attempt.body });
			expectError(a, 404, 404102);
			expect(fingerprint(a, swap)).toEqual(fingerprint(b));
		}
		expect(await names(owner.secret, twin)).toEqual(["hidden.txt"]);
		expect(await uploadObject(handler)).toEqual(expect.any(String));
	});
});

import { describe, expect, it } from "vitest";
import { call, expectError, fingerprint } from "../support/requests";
import { type Account, bootstrap, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { absentIdentityLike } from "../support/shards";
import { addEntries, ledger, warmWriter } from "../support/ledgers";
import { attach, idPath } from "../identities/helpers";

// A name the caller's role hides answers as an absent name does, on writes as on reads: same
// status, body and headers (Server-Timing's figures included), and nothing written.

const everything = { effect: "deny", actions: null };

async function withRule(admin: Account, rules: Record<string, string>) {
	const made = await call("POST", "/roles", {
		secret: admin.secret,
		body: { name: "Narrow", rules, statement: everything },
	});
	expect(made.status).toBe(201);
	const user = await call("POST", "/users", { secret: admin.secret, body: { name: "narrow", role: made.body.uuid } });
	const pin = await call("POST", `/users/${user.body.uuid}/secrets`, { secret: admin.secret, body: {} });
	return (await call("POST", `/secrets/${admin.account}/${pin.body.pin}`)).body.secret as string;
}

// Names that differ by design, and the times a write stamps (the clock moves between requests).
const times = (text: string) => text.replace(/"(\w+_ts)":[\d.]+/g, '"$1":"ts"');
const swapping = (from: string, to: string) => (text: string) => times(text.replaceAll(from, to));

describe("identities a role hides", () => {
	it("answer a create as absent ones do, and nothing is written", async () => {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await attach(admin.secret, twin, { "SSN#123456789": {}, "RFID#1": {} });
		const narrow = await withRule(admin, { identity: "not (identity =~ '^SSN#')" });

		const hidden = await call("POST", idPath(twin), { secret: narrow, body: { identities: { "SSN#123456789": {} } } });
		const absent = await call("POST", idPath(twin), { secret: narrow, body: { identities: { "SSN#987654321": {} } } });
		expectError(hidden, 403, 403102);
		expect(fingerprint(hidden, swapping("123456789", "987654321"))).toEqual(fingerprint(absent));

		// The same for a visible identity written beside them, and the list that follows.
		const both = async (id: string) =>
			call("POST", idPath(twin), { secret: narrow, body: { identities: { "RFID#2": {}, [id]: {} } } });
		expect(fingerprint(await both("SSN#123456789"), swapping("123456789", "987654321"))).toEqual(
			fingerprint(await both("SSN#987654321")),
		);
		const stored = await call("GET", idPath(twin), { secret: admin.secret });
		expect(Object.keys(stored.body.identities).sort()).toEqual(["RFID#1", "SSN#123456789"]);
		expect(stored.body.identities["SSN#123456789"].created_ts).toBe(stored.body.identities["RFID#1"].created_ts);

		// A visible one it already has is still a conflict.
		expectError(
			await call("POST", idPath(twin), { secret: narrow, body: { identities: { "RFID#1": {} } } }),
			409,
			409101,
		);
	});

	it("cost what absent ones cost when the writer attaches a visible one beside them", async () => {
		const admin = await bootstrap();
		const [withHidden, without] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await attach(admin.secret, withHidden, { "SSN#1": {}, "SSN#2": {} });
		const narrow = await withRule(admin, { identity: "not (identity =~ '^SSN#')" });
		const created = async (twin: string) =>
			call("POST", idPath(twin), { secret: narrow, body: { identities: { "RFID#9": {} } } });
		const first = await created(withHidden);
		expect(first.status).toBe(201);
		expect(fingerprint(first, times)).toEqual(fingerprint(await created(without), times));
	});
});

describe("ledger entries a role hides", () => {
	async function setUp(entryRule: string) {
		const admin = await bootstrap();
		const twin = await newTwin(admin.secret);
		await addEntries(admin.secret, twin, { salary: { value: 100 }, note: { value: "seen" } });
		const narrow = await userWithRules(admin, { entry: entryRule });
		await warmWriter(narrow.secret, await newTwin(admin.secret));
		return { admin, twin, narrow };
	}

	it("answer an add as absent ones do when the rule hides them by name, and nothing is written", async () => {
		const { admin, twin, narrow } = await setUp("not (entry_name in ['salary', 'bonus'])");
		const add = (name: string) =>
			call("POST", ledger(twin), { secret: narrow.secret, body: { entries: { [name]: { value: 1 } } } });
		const hidden = await add("salary");
		expectError(hidden, 403, 403102);
		expect(fingerprint(hidden, swapping("salary", "bonus"))).toEqual(fingerprint(await add("bonus")));
		const stored = await call("GET", ledger(twin), { secret: admin.secret });
		expect(Object.keys(stored.body.entries).sort()).toEqual(["note", "salary"]);
		expect(stored.body.entries.salary.value).toBe(100);
	});

	it("answer update, value update, delete and reads as absent ones do", async () => {
		const { twin, narrow } = await setUp("entry_name != 'salary'");
		const cases: [string, string, unknown?][] = [
			["PATCH", ledger(twin), { entries: { NAME: { value: 2 } } }],
			["PATCH", ledger(twin, "personal", "/value"), { entries: { NAME: { value: 2 } } }],
			["DELETE", `${ledger(twin)}?entries=NAME`],
			["GET", `${ledger(twin)}?entries=NAME`],
			["GET", `${ledger(twin, "personal", "/value")}?entries=NAME`],
			["GET", `${ledger(twin, "personal", "/history")}?entries=NAME`],
			["POST", ledger(twin), { entries: { other: { value: 1 } }, conditions: { NAME: "entry_value == null" } }],
		];
		for (const [method, path, body] of cases) {
			const send = (name: string) =>
				call(method, path.replace("NAME", name), {
					secret: narrow.secret,
					body: body && JSON.parse(JSON.stringify(body).replace("NAME", name)),
				});
			// The conditional add writes `other`: it is taken away so both requests meet the same ledger.
			const tidy = () =>
				method === "POST" ? call("DELETE", `${ledger(twin)}?entries=other`, { secret: narrow.secret }) : undefined;
			const hidden = fingerprint(await send("salary"), swapping("salary", "wages"));
			await tidy();
			const absent = fingerprint(await send("wages"), times);
			await tidy();
			expect([method, path, hidden]).toEqual([method, path, absent]);
		}
	});

	it("cost nothing in Server-Timing on a write beside them", async () => {
		const admin = await bootstrap();
		const [withHidden, without] = [await newTwin(admin.secret), await newTwin(admin.secret)];
		await addEntries(admin.secret, withHidden, { salary: { value: 1 }, bonus: { value: 2 }, note: { value: 3 } });
		await addEntries(admin.secret, without, { note: { value: 3 } });
		const narrow = await userWithRules(admin, { entry: "not (entry_name in ['salary', 'bonus'])" });
		await warmWriter(narrow.secret, await newTwin(admin.secret));
		for (const [method, tail, body] of [
			["POST", "", { entries: { extra: { value: 1 } } }],
			["PATCH", "", { entries: { note: { value: 4 } } }],
			["PATCH", "/value", { entries: { note: { value: 5 } } }],
			["DELETE", "", undefined],
		] as const) {
			const send = (twin: string) => call(method, ledger(twin, "personal", tail), { secret: narrow.secret, body });
			const first = await send(withHidden);
			expect(first.status).toBeLessThan(300);
			expect([method, tail, fingerprint(first, times)]).toEqual([
				method,
				tail,
				fingerprint(await send(without), times),
			]);
		}
		// The hidden entries outlived the writer's delete of everything it sees.
		expect(Object.keys((await call("GET", ledger(withHidden), { secret: admin.secret })).body.entries).sort()).toEqual([
			"bonus",
			"salary",
		]);
	});

	it("refuse an add past 64 KiB without telling the ledger's size", async () => {
		const { twin, narrow } = await setUp("entry_name != 'salary'");
		await addEntries(narrow.secret, twin, { first: { value: "x".repeat(40_000) } });
		const big = await call("POST", ledger(twin), {
			secret: narrow.secret,
			body: { entries: { second: { value: "x".repeat(30_000) } } },
		});
		expectError(big, 400, 400106);
		expect(big.body.description).toBe("The ledger would exceed its limit of 65536 bytes");
	});
});

describe("resolve_twin_identity over identities the reader may not see", () => {
	it("answers as for an identity nobody attached, headers included, in every context", async () => {
		const [a, b, other] = [await bootstrap(), await bootstrap(), await bootstrap()];
		const twin = await newTwin(a.secret, { shared: true });
		// A's identity is public, but its rule refuses B's users; B's twin rule shows them the twin.
		await attach(a.secret, twin, {
			"RFID#hidden1": { visibility: "USER.partner == true" },
			"SN#shown": { visibility: "true" },
		});
		const reader = await withRule(b, { twin: "TWIN.shared == true", identity: "true" });
		// B's own identity, which the second user's identity rule hides by name.
		const narrow = await withRule(b, { twin: "TWIN.shared == true", identity: "not (identity =~ '^RFID#')" });
		await attach(b.secret, await newTwin(b.secret), { "RFID#ownid1": {} });

		const contexts = [
			"personal",
			"system",
			a.account,
			`${a.account},${other.account}`,
			`${other.account},${a.account},${b.account}`,
			`${b.account},${a.account}`,
		];
		const cases: [string, string][] = [
			[reader, "RFID#hidden1"],
			[narrow, "RFID#hidden1"],
			[narrow, "RFID#ownid1"],
		];
		for (const [secret, id] of cases) {
			for (const context of contexts) {
				for (const details of ["false", "true"]) {
					const resolve = (name: string) =>
						call("GET", `/resolve/${encodeURIComponent(name)}?context=${context}&details=${details}`, { secret });
					const hidden = await resolve(id);
					expect(hidden.body).toEqual({ twins: [], cursor: null });
					const absent = fingerprint(await resolve(await absentIdentityLike(id, "RFID#absent")));
					expect([id, context, details, fingerprint(hidden)]).toEqual([id, context, details, absent]);
				}
			}
		}
		// What the reader may see is found, so the comparison above is not of two empty reads.
		const shown = await call("GET", `/resolve/${encodeURIComponent("SN#shown")}?context=system`, { secret: reader });
		expect(shown.body.twins).toEqual([twin]);
	});
});

import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BASE, call, fetchWithEnv, randomAddress } from "../support/requests";
import { bootstrap, member, role } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";

// A ledger write runs as its writer is when the account's object reaches it, not as the Worker
// found it (docs/permission-model.md): a role narrowed while the write waits applies to it, as
// to every other write of the account.

// The ACCOUNTS binding, with calls of `method` held until `release`; `reached` resolves when the
// first one arrives, so the test knows the Worker has checked the caller and called the object.
function holding(method: string) {
	let arrived!: () => void;
	let release!: () => void;
	const reached = new Promise<void>((resolve) => (arrived = resolve));
	const gate = new Promise<void>((resolve) => (release = resolve));
	const namespace = new Proxy(env.ACCOUNTS, {
		get(target, property) {
			if (property !== "getByName") return Reflect.get(target, property);
			return (name: string) => {
				const stub = target.getByName(name) as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
				return new Proxy(stub, {
					get(inner, key) {
						if (key !== method) return (...args: unknown[]) => inner[key as string](...args);
						return async (...args: unknown[]) => {
							arrived();
							await gate;
							return inner[method](...args);
						};
					},
				});
			};
		},
	});
	return { namespace, reached, release };
}

async function heldWrite(secret: string, twin: string, entries: Record<string, unknown>, narrow: () => Promise<void>) {
	const held = holding("writeLedger");
	const headers = { authorization: secret, "content-type": "application/json", "cf-connecting-ip": randomAddress() };
	const request = new Request(BASE + ledger(twin), { method: "POST", headers, body: JSON.stringify({ entries }) });
	const answer = fetchWithEnv(request, { ACCOUNTS: held.namespace });
	await held.reached;
	await narrow();
	held.release();
	const res = await answer;
	return { status: res.status, body: (await res.json()) as { subcode?: number } };
}

describe("a ledger write in flight when the writer's role is narrowed", () => {
	async function writerOn(rules: Record<string, string | null>) {
		const admin = await bootstrap();
		const writerRole = await role(admin, { effect: "deny", actions: null }, rules);
		const writer = await member(admin, writerRole);
		const twin = await newTwin(admin.secret, { fleet: "north" });
		await addEntries(admin.secret, twin, { kept: { value: 0 } });
		const narrow = (body: Record<string, unknown>) => async () => {
			expect((await call("PATCH", `/roles/${writerRole}`, { secret: admin.secret, body })).status).toBe(200);
		};
		const entries = async () =>
			Object.keys((await call("GET", ledger(twin), { secret: admin.secret })).body.entries).sort();
		return { writer, twin, narrow, entries };
	}

	it("is refused by the statement as it now is (403101), and writes nothing", async () => {
		const { writer, twin, narrow, entries } = await writerOn({ twin: "TWIN.fleet == 'north'" });
		const res = await heldWrite(
			writer.secret,
			twin,
			{ a: { value: 1 } },
			narrow({ statement: { effect: "deny", actions: ["add_twin_ledger_entry"] } }),
		);
		expect([res.status, res.body.subcode]).toEqual([403, 403101]);
		expect(await entries()).toEqual(["kept"]);
	});

	it("meets the twin rule as it now is: a twin it no longer sees is 404102", async () => {
		const { writer, twin, narrow, entries } = await writerOn({ twin: "TWIN.fleet == 'north'" });
		const res = await heldWrite(
			writer.secret,
			twin,
			{ a: { value: 1 } },
			narrow({ rules: { twin: "TWIN.fleet == 'south'", entry: null, identity: null } }),
		);
		expect([res.status, res.body.subcode]).toEqual([404, 404102]);
		expect(await entries()).toEqual(["kept"]);
	});

	it("meets the entry rule as it now is: an entry it may no longer see is 403102", async () => {
		const { writer, twin, narrow, entries } = await writerOn({ twin: "true", entry: "true" });
		const res = await heldWrite(
			writer.secret,
			twin,
			{ a: { value: 1 } },
			narrow({ rules: { twin: "true", entry: "entry_name != 'a'", identity: null } }),
		);
		expect([res.status, res.body.subcode]).toEqual([403, 403102]);
		expect(await entries()).toEqual(["kept"]);
	});

	it("runs when the change leaves it allowed", async () => {
		const { writer, twin, narrow, entries } = await writerOn({ twin: "TWIN.fleet == 'north'" });
		const res = await heldWrite(writer.secret, twin, { a: { value: 1 } }, narrow({ name: "Renamed" }));
		expect(res.status).toBe(201);
		expect(await entries()).toEqual(["a", "kept"]);
	});
});

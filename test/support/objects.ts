// The Durable Objects reached past the Worker: the implementation behind a lazy object's stub,
// the account's object's environment changed for a test, its restart as an eviction would
// restart it, and its alarm fired at its time.
import { evictDurableObject, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect, onTestFinished } from "vitest";
import type { AccountDO } from "../../src/objects";
import { implementationOf, type Lazy } from "../../src/base/lazy-object";

// Runs `work` on a Durable Object's implementation (what its methods run on: its env, its
// fields), loading it as the object's first call would.
export function inImplementation<I, T>(
	stub: DurableObjectStub<Rpc.DurableObjectBranded & Lazy<I>>,
	work: (implementation: I, state: DurableObjectState) => T | Promise<T>,
) {
	return runInDurableObject(stub, async (instance: Lazy<I>, state) => work(await implementationOf(instance), state));
}

// Changes what the account's object reads from its environment (the doc limits MAX_UPLOADS,
// MAX_TWIN_DOCS and MAX_DOC_BYTES, the DOCS bucket) until the test ends. `call`'s `env`
// option cannot: it reaches the Worker, and the object keeps the env it was built with. The
// object of an account a test made serves only that test. Answers a function that undoes the
// change sooner.
export async function objectEnv(account: string, changes: Partial<Record<keyof Env, unknown>>) {
	type Swappable = { env: Env };
	const stub = env.ACCOUNTS.getByName(account);
	const names = Object.keys(changes) as (keyof Env)[];
	const original = await inImplementation(stub, (instance) => {
		const swappable = instance as unknown as Swappable;
		const before = Object.fromEntries(names.map((name) => [name, swappable.env[name]]));
		swappable.env = { ...swappable.env, ...changes } as Env;
		return before;
	});
	let undone = false;
	const undo = async () => {
		if (undone) return;
		undone = true;
		await inImplementation(stub, (instance) => {
			const swappable = instance as unknown as Swappable;
			swappable.env = { ...swappable.env, ...original } as Env;
		});
	};
	onTestFinished(undo);
	return undo;
}

// Restarts the account's object as an eviction would (its storage, alarm included, kept): the
// next call meets a new instance.
export async function restartAccountObject(account: string) {
	const stub = env.ACCOUNTS.getByName(account);
	const mark = Symbol.for("before-restart");
	await runInDurableObject(stub, (instance: AccountDO) => {
		(instance as unknown as Record<symbol, boolean>)[mark] = true;
	});
	await evictDurableObject(stub);
	const fresh = await runInDurableObject(
		stub,
		(instance: AccountDO) => !(instance as unknown as Record<symbol, boolean>)[mark],
	);
	expect(fresh).toBe(true);
}

// The account's object's alarm, run as it fires at its time: every timer due by then runs
// (src/account/timers.ts). A test that moved stored times back (an expired cursor, a lease)
// so stands for the clock reaching the alarm.
export async function fireAccountAlarm(account: string): Promise<boolean> {
	const stub = env.ACCOUNTS.getByName(account);
	await runInDurableObject(stub, async (_instance: unknown, state: DurableObjectState) => {
		const alarm = await state.storage.getAlarm();
		if (alarm !== null) state.storage.sql.exec("UPDATE timers SET due_ms = ? WHERE due_ms <= ?", Date.now(), alarm);
	});
	return runDurableObjectAlarm(stub);
}

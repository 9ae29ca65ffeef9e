import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { implementationOf, lazyObject } from "../../src/base/lazy-object";

// An implementation that counts how often it is loaded and built.
function counted() {
	const seen = { loads: 0, built: 0 };
	class Adder {
		constructor(
			readonly ctx: DurableObjectState,
			readonly env: Env,
		) {
			seen.built++;
		}
		add(a: number, b: number) {
			return a + b;
		}
		async alarm() {
			throw new Error("alarm ran");
		}
	}
	const Lazy = lazyObject(async () => {
		seen.loads++;
		return Adder;
	}, ["add", "alarm"]);
	return { seen, Lazy, Adder };
}

// The runtime builds an object only from a real state: one of an unused account object's.
const withState = <T>(work: (state: DurableObjectState) => Promise<T>) =>
	runInDurableObject(env.ACCOUNTS.getByName(crypto.randomUUID()), (_: unknown, state) => work(state));

describe("an object whose implementation loads with its first call", () => {
	it("loads and builds nothing until it is called, then one implementation for calls made at once", async () => {
		const { seen, Lazy, Adder } = counted();
		await withState(async (ctx) => {
			const object = new Lazy(ctx, env);
			expect(seen).toEqual({ loads: 0, built: 0 });

			expect(await Promise.all([object.add(1, 2), object.add(3, 4)])).toEqual([3, 7]);
			expect(seen).toEqual({ loads: 1, built: 1 });
			const implementation = await implementationOf(object);
			expect(implementation).toBeInstanceOf(Adder);
			expect(implementation.ctx).toBe(ctx);
			expect(implementation.env).toBe(env);
			expect(seen).toEqual({ loads: 1, built: 1 });
		});
	});

	it("has each listed method on its prototype, where the runtime looks for its handlers", async () => {
		const { Lazy } = counted();
		expect(Object.getOwnPropertyNames(Lazy.prototype)).toEqual(expect.arrayContaining(["add", "alarm"]));
		await withState((ctx) => expect(new Lazy(ctx, env).alarm()).rejects.toThrow("alarm ran"));
	});

	it("tries a failed build again with the next call", async () => {
		let attempts = 0;
		class Flaky {
			constructor() {
				if (++attempts === 1) throw new Error("storage unavailable");
			}
			ping() {
				return "pong";
			}
		}
		const Lazy = lazyObject(async () => Flaky, ["ping"]);
		await withState(async (ctx) => {
			const object = new Lazy(ctx, env);
			await expect(object.ping()).rejects.toThrow("storage unavailable");
			expect(await object.ping()).toBe("pong");
			expect(attempts).toBe(2);
		});
	});

	it("builds one implementation per object", async () => {
		const { seen, Lazy } = counted();
		await withState(async (ctx) => {
			await new Lazy(ctx, env).add(1, 1);
			await new Lazy(ctx, env).add(1, 1);
		});
		expect(seen).toEqual({ loads: 2, built: 2 });
	});
});

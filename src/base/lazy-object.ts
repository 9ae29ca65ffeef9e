import { DurableObject } from "cloudflare:workers";

// The public methods of an object's implementation: what the runtime (alarm, fetch, socket
// events) and RPC stubs call. `keyof` leaves private and protected members out.
type Methods<T> = { [K in keyof T]: T[K] extends (...args: never[]) => unknown ? K : never }[keyof T] & string;

// An implementation is built as the runtime would build the object: from its state and env.
type Implementation<T> = new (ctx: DurableObjectState, env: Env) => T;

// The implementation's methods as the object has them: each waits for the implementation first.
type Async<T, K extends keyof T> = {
	[P in K]: T[P] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

const LOADED = Symbol("loaded");
const IMPLEMENTATION = Symbol("implementation");

// What a lazy object's implementation is, for a test that reaches past the object's methods
// (runInDurableObject hands it the object). A symbol, so that no RPC stub can call it.
export type Lazy<T> = { [IMPLEMENTATION](): Promise<T> };
export const implementationOf = <T>(object: Lazy<T>): Promise<T> => object[IMPLEMENTATION]();

// A Durable Object class that loads its implementation with its first call. Every isolate of
// the Worker evaluates the classes it exports, and an object's implementation (its writes,
// the data layer, the rules and their regular-expression engine) is most of the script: an
// isolate that serves requests, or another kind of object, never runs it, so it stays
// unevaluated there. `methods` must name every public method of the implementation (the type
// refuses a list that leaves one out), so no handler the runtime looks for can go missing.
export function lazyObject<T extends object, const M extends readonly Methods<T>[]>(
	load: () => Promise<Implementation<T>>,
	methods: M &
		([Exclude<Methods<T>, M[number]>] extends [never] ? unknown : { unlisted: Exclude<Methods<T>, M[number]> }),
) {
	class LazyObject extends DurableObject<Env> {
		declare [LOADED]?: Promise<T>;

		// One implementation per object, whichever call comes first; calls made while it loads
		// wait for the same one (an object's calls run in one context, so unlike a Worker's
		// requests, base/load-once.ts, they may share a promise). One that failed to load or
		// build is tried again by the next call, as the runtime builds an object again after
		// its constructor threw.
		[IMPLEMENTATION](): Promise<T> {
			this[LOADED] ??= load()
				.then((Built) => new Built(this.ctx, this.env))
				.catch((error: unknown) => {
					this[LOADED] = undefined;
					throw error;
				});
			return this[LOADED];
		}
	}
	for (const name of methods as readonly string[]) {
		Object.defineProperty(LazyObject.prototype, name, {
			async value(this: LazyObject, ...args: unknown[]) {
				const built = (await this[IMPLEMENTATION]()) as Record<string, (...args: unknown[]) => unknown>;
				return built[name]!(...args);
			},
			writable: true,
			configurable: true,
		});
	}
	return LazyObject as unknown as new (
		ctx: DurableObjectState,
		env: Env,
	) => DurableObject<Env> & Async<T, M[number]> & Lazy<T>;
}

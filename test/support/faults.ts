// Failures a test makes on purpose: faults injected into D1 (its sessions too), network failures
// of the requests the Worker and its objects send, and console.error recorded instead of printed
// for a test that makes the service log a failure. Each spy is undone when its test ends.
import { onTestFinished, vi } from "vitest";

// A fault injected into D1 reaches its sessions too (the Worker runs each request in one).
export function sessionsToo(target: D1Database, property: string | symbol, wrap: (db: D1Database) => D1Database) {
	if (property !== "withSession") return undefined;
	return (constraint?: string) => wrap(target.withSession(constraint) as unknown as D1Database);
}

// D1 whose batches fail after their first statement has run: D1 runs a batch as one
// transaction, so nothing of it may remain.
export function failingBatches(db: D1Database): D1Database {
	return new Proxy(db, {
		get(target, property) {
			const session = sessionsToo(target, property, failingBatches);
			if (session) return session;
			if (property === "batch") {
				return (statements: D1PreparedStatement[]) =>
					target.batch([statements[0], target.prepare("SELECT * FROM injected_fault"), ...statements.slice(1)]);
			}
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// D1 whose writes fail once `allowed` of them have run, as a database that stops answering
// between two commits; reads still pass. A write is a batch holding an INSERT, UPDATE or
// DELETE, or such a statement run alone.
export function failingWrites(db: D1Database, allowed = 0): D1Database {
	let left = allowed;
	const inner = new WeakMap<object, D1PreparedStatement>();
	const spend = () => {
		if (left <= 0) throw new Error("injected fault: the database refuses writes");
		left--;
	};
	const writing = (statement: D1PreparedStatement): D1PreparedStatement => {
		const proxy = new Proxy(statement, {
			get(target, property) {
				if (property === "bind") return (...values: unknown[]) => writing(target.bind(...values));
				if (property === "run" || property === "all" || property === "raw" || property === "first") {
					return (...args: unknown[]) => {
						spend();
						return (target[property] as (...args: unknown[]) => unknown).apply(target, args);
					};
				}
				const value = Reflect.get(target, property, target);
				return typeof value === "function" ? value.bind(target) : value;
			},
		});
		inner.set(proxy, statement);
		return proxy;
	};
	return new Proxy(db, {
		get(target, property) {
			const session = sessionsToo(target, property, (d1) => failingWrites(d1, left));
			if (session) return session;
			if (property === "prepare") {
				return (query: string) => {
					const statement = target.prepare(query);
					return /^\s*(insert|update|delete)\b/i.test(query) ? writing(statement) : statement;
				};
			}
			if (property === "batch") {
				return async (statements: D1PreparedStatement[]) => {
					if (statements.some((statement) => inner.has(statement))) spend();
					return target.batch(statements.map((statement) => inner.get(statement) ?? statement));
				};
			}
			const value = Reflect.get(target, property, target);
			return typeof value === "function" ? value.bind(target) : value;
		},
	});
}

// console.error, recorded instead of printed, for a test that makes the service log a failure on
// purpose and checks what it logged. Restored when the test ends.
export function loggedErrors() {
	const spy = vi.spyOn(console, "error").mockImplementation(() => undefined);
	onTestFinished(() => spy.mockRestore());
	return spy;
}

// The next `times` requests the Worker or its objects (they run in this isolate) send to `url`
// fail as the network fails them: "lost" at once, as a dropped connection, "hang" when the
// request's own signal gives up, as a receiver that never answers. Not made on a real
// connection, whose failure the runtime also reports as an uncaught exception of its own,
// which reads as a failed test. Other requests go out as usual. Undone when the test ends.
export function failingNetwork(url: string, how: "lost" | "hang", times = Number.POSITIVE_INFINITY) {
	const real = globalThis.fetch;
	let left = times;
	const spy = vi.spyOn(globalThis, "fetch").mockImplementation((input, init) => {
		const target = new URL(input instanceof Request ? input.url : input).href;
		if (target !== new URL(url).href || left <= 0) return real(input, init);
		left--;
		if (how === "lost") return Promise.reject(new Error("Network connection lost."));
		return new Promise((_, reject) =>
			init?.signal?.addEventListener("abort", () => reject(init.signal?.reason), { once: true }),
		);
	});
	onTestFinished(() => spy.mockRestore());
	return spy;
}

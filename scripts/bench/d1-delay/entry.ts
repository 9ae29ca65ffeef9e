// The Worker the writes benchmark runs in place of src/index.ts: the product unchanged, but with
// every D1 binding it reaches wrapped, in the Worker and in each Durable Object alike. Each call
// that waits for D1 (a statement's first, all, run or raw, a batch, an exec, the same on a
// session) is counted, and first waits a delay the benchmark sets, so that it can tell how many
// round trips a write costs the whole system, the work the objects do after the answer
// included, and how the write rate holds up when each round trip takes longer, as it does
// against a remote database. None of this is in the product: only the benchmark serves it.
//
// Locally the Worker and its objects run in one isolate, so the counts kept in this module see
// every call. They are kept by origin (the Worker, each object class): a count of an object's
// calls read through the Worker's route shows that this holds, and the benchmark checks it.
//
// GET /__bench/d1 answers {"calls": N, "delay_ms": D, "by": {origin: N, ...}, "bindings": [...]}
// and POST /__bench/d1?delay_ms=D sets the delay for the calls that begin after it.
import * as product from "../../../src/index";
import type { WebhookJob } from "../../../src/notifications/jobs";

type Origin = "worker" | "AccountDO" | "DeliveryDO" | "MoveDO" | "StreamDO" | "TimeseriesDO";

const counts: Record<Origin, number> = {
	worker: 0,
	AccountDO: 0,
	DeliveryDO: 0,
	MoveDO: 0,
	StreamDO: 0,
	TimeseriesDO: 0,
};
// The env keys found to be D1 bindings, so that the benchmark can see none was missed.
const wrappedBindings = new Set<string>();
let delayMs = 0;

const ROUTE = "/__bench/d1";
const STATEMENT_CALLS = new Set<PropertyKey>(["first", "all", "run", "raw"]);

// One round trip: counted when asked for, then made after the delay.
async function roundTrip<T>(origin: Origin, call: () => Promise<T>): Promise<T> {
	counts[origin]++;
	if (delayMs > 0) await scheduler.wait(delayMs);
	return call();
}

// A wrapped statement to the runtime's own: a batch is handed the statements it made.
const runtimeStatement = new WeakMap<object, D1PreparedStatement>();

// A method of the runtime's object, called on that object and not on the wrapper, so that a
// method calling another of its own (a first() made of an all()) is counted once.
function passThrough(target: object, property: PropertyKey): unknown {
	const value = Reflect.get(target, property, target);
	return typeof value === "function" ? value.bind(target) : value;
}

function wrapStatement(statement: D1PreparedStatement, origin: Origin): D1PreparedStatement {
	const wrapped = new Proxy(statement, {
		get(target, property) {
			if (property === "bind") return (...values: unknown[]) => wrapStatement(target.bind(...values), origin);
			if (STATEMENT_CALLS.has(property)) {
				const method = Reflect.get(target, property, target) as (...args: unknown[]) => Promise<unknown>;
				return (...args: unknown[]) => roundTrip(origin, () => method.apply(target, args));
			}
			return passThrough(target, property);
		},
	});
	runtimeStatement.set(wrapped, statement);
	return wrapped;
}

// A database or one of its sessions: the same calls wait for D1 on both.
function wrapDatabase<T extends D1Database | D1DatabaseSession>(db: T, origin: Origin): T {
	return new Proxy(db, {
		get(target, property) {
			if (property === "prepare") return (query: string) => wrapStatement(target.prepare(query), origin);
			if (property === "batch")
				return (statements: D1PreparedStatement[]) =>
					roundTrip(origin, () => target.batch(statements.map((s) => runtimeStatement.get(s) ?? s)));
			if (property === "exec" && "exec" in target)
				return (query: string) => roundTrip(origin, () => target.exec(query));
			if (property === "withSession" && "withSession" in target)
				return (constraint?: string) => wrapDatabase(target.withSession(constraint), origin);
			return passThrough(target, property);
		},
	});
}

// A D1 binding by its shape: prepare, batch and withSession as methods of its class. Looked for
// on the prototypes, not read off the object: a service binding answers any property read with
// a remote method, and would look like a database to a read.
function isD1(value: unknown): value is D1Database {
	return (
		typeof value === "object" &&
		value !== null &&
		["prepare", "batch", "withSession"].every((name) => classMethod(value, name))
	);
}

function classMethod(value: object, name: string): boolean {
	let proto = Object.getPrototypeOf(value);
	while (proto && proto !== Object.prototype) {
		if (typeof Object.getOwnPropertyDescriptor(proto, name)?.value === "function") return true;
		proto = Object.getPrototypeOf(proto);
	}
	return false;
}

// One wrapped env per env and origin, so that what the product keeps per database (its query
// builders) is kept as it is without the wrapper.
const wrappedEnvs = new Map<Origin, WeakMap<Env, Env>>();

function wrap(env: Env, origin: Origin): Env {
	const byEnv = wrappedEnvs.get(origin) ?? new WeakMap<Env, Env>();
	wrappedEnvs.set(origin, byEnv);
	let wrapped = byEnv.get(env);
	if (wrapped) return wrapped;
	const databases = new Map<PropertyKey, D1Database>();
	wrapped = new Proxy(env, {
		get(target, property) {
			const value = Reflect.get(target, property, target);
			if (!isD1(value)) return value;
			const known = databases.get(property);
			if (known) return known;
			const db = wrapDatabase(value, origin);
			databases.set(property, db);
			wrappedBindings.add(String(property));
			return db;
		},
	});
	byEnv.set(env, wrapped);
	return wrapped;
}

function benchRoute(request: Request): Response {
	const url = new URL(request.url);
	if (request.method === "POST") {
		const delay = Number(url.searchParams.get("delay_ms"));
		if (!Number.isFinite(delay) || delay < 0)
			return new Response("delay_ms must be a number of 0 or more\n", { status: 400 });
		delayMs = delay;
	} else if (request.method !== "GET") return new Response(null, { status: 405 });
	const calls = Object.values(counts).reduce((a, b) => a + b, 0);
	return Response.json({ calls, delay_ms: delayMs, by: counts, bindings: [...wrappedBindings].sort() });
}

export class AccountDO extends product.AccountDO {
	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, wrap(env, "AccountDO"));
	}
}

export class DeliveryDO extends product.DeliveryDO {
	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, wrap(env, "DeliveryDO"));
	}
}

export class MoveDO extends product.MoveDO {
	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, wrap(env, "MoveDO"));
	}
}

export class StreamDO extends product.StreamDO {
	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, wrap(env, "StreamDO"));
	}
}

export class TimeseriesDO extends product.TimeseriesDO {
	constructor(ctx: DurableObjectState, env: Env) {
		super(ctx, wrap(env, "TimeseriesDO"));
	}
}

export default {
	fetch(request, env, ctx) {
		if (new URL(request.url).pathname === ROUTE) return benchRoute(request);
		return product.default.fetch(request, wrap(env, "worker"), ctx);
	},
	queue(batch, env) {
		return product.default.queue(batch, wrap(env, "worker"));
	},
} satisfies ExportedHandler<Env, WebhookJob>;

import { createExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import worker from "../src/index";
import { expect } from "vitest";

export const BASE = "https://registry.test";

type CallOptions = {
	secret?: string;
	body?: unknown;
	headers?: Record<string, string>;
	// Bindings to replace for this request (another CALLBACK_POLICY, a recording producer).
	env?: Partial<Record<keyof Env, unknown>>;
};

// Every call goes through the Worker's own fetch handler, as a client's request would.
export async function call(method: string, path: string, options: CallOptions = {}) {
	const headers = new Headers(options.headers);
	// Each call comes from its own client address unless the test names one, so that the
	// per-address rate limits (src/http/rate-limit.ts) only meet the tests that aim at them.
	if (!headers.has("cf-connecting-ip")) headers.set("cf-connecting-ip", randomAddress());
	if (options.secret) headers.set("authorization", options.secret);
	let body: string | undefined;
	if (options.body !== undefined) {
		body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
		headers.set("content-type", "application/json");
	}
	const request = new Request(BASE + path, { method, headers, body });
	const response = await (options.env ? fetchWithEnv(request, options.env) : exports.default.fetch(request));
	const text = await response.text();
	return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

export function randomAddress() {
	const bytes = crypto.getRandomValues(new Uint8Array(3));
	return `10.${bytes.join(".")}`;
}

export type Account = { account: string; user: string; role: string; secret: string };

export async function bootstrap(): Promise<Account> {
	const res = await call("POST", "/admin/accounts", { headers: { authorization: `Bearer ${env.ADMIN_TOKEN}` } });
	expect(res.status).toBe(201);
	return res.body;
}

export async function issueSecret(admin: Account, user: string, validity_ts?: number | null) {
	const pin = await call("POST", `/users/${user}/secrets`, { secret: admin.secret, body: { validity_ts } });
	expect(pin.status).toBe(201);
	const redeemed = await call("POST", `/secrets/${admin.account}/${pin.body.pin}`);
	expect(redeemed.status).toBe(201);
	return redeemed.body.secret as string;
}

export async function createUser(admin: Account, role = admin.role, name = "someone") {
	const res = await call("POST", "/users", { secret: admin.secret, body: { name, role } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// The envelope of CONTRACT section 2, with the trace equal to the response's request id.
export function expectError(res: Awaited<ReturnType<typeof call>>, status: number, subcode: number) {
	expect(res.status).toBe(status);
	expect(res.body).toMatchObject({ subcode, trace: res.headers.get("x-request-id") });
	expect(typeof res.body.description).toBe("string");
	expect(JSON.stringify(res.body)).not.toMatch(/at .*\.(ts|js):\d+/);
}

// A role written straight into D1, past the API: no grant check, no journal line in the
// account's object. For tests that need a role whose making is not what they test.
export async function insertRole(account: string, statement: { effect: "allow" | "deny"; actions: string[] | null }) {
	const uuid = crypto.randomUUID();
	await env.DB.prepare(
		"INSERT INTO roles (uuid, account, name, rules, statement, created_ts, updated_ts) VALUES (?, ?, ?, ?, ?, 0, 0)",
	)
		.bind(uuid, account, "test role", JSON.stringify({ twin: null, entry: null, identity: null }), JSON.stringify(statement))
		.run();
	return uuid;
}

// A user with the given statement and a working secret.
export async function userWith(admin: Account, statement: { effect: "allow" | "deny"; actions: string[] | null }) {
	const role = await insertRole(admin.account, statement);
	const user = await createUser(admin, role);
	return { ...admin, user, role, secret: await issueSecret(admin, user) };
}

export type Statement = { effect: "allow" | "deny"; actions: string[] | null };
type Rules = { twin?: string | null; entry?: string | null; identity?: string | null };

// A role made through the API by `admin`, so every grant check applies to it.
export async function role(admin: Account, statement: Statement, rules: Rules = {}, name = "Some role") {
	const res = await call("POST", "/roles", { secret: admin.secret, body: { name, statement, rules } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// A user of `admin`'s account with the given role and description, and a working secret.
export async function member(admin: Account, roleUuid: string, description: Record<string, unknown> = {}) {
	const res = await call("POST", "/users", { secret: admin.secret, body: { name: "member", role: roleUuid, description } });
	expect(res.status).toBe(201);
	const user = res.body.uuid as string;
	return { ...admin, user, role: roleUuid, secret: await issueSecret(admin, user) };
}

// Calls the Worker's fetch handler with a modified environment (a missing binding, another
// ADMIN_TOKEN), which the `exports` entry point cannot take.
export function fetchWithEnv(request: Request, changes: Partial<Record<keyof Env, unknown>>) {
	type Incoming = Parameters<typeof worker.fetch>[0];
	return worker.fetch(request as Incoming, { ...env, ...changes } as Env, createExecutionContext());
}

// Twins written straight into D1 in batches, for tests that need many.
export async function seedTwins(owner: string, descriptions: Record<string, unknown>[]) {
	const uuids = descriptions.map(() => crypto.randomUUID());
	const statement = env.DB.prepare(
		`INSERT INTO twins (uuid, owner, status, description, creation_certificate, termination_certificate, updated_ts)
		VALUES (?, ?, 'alive', ?, ?, NULL, 1)`,
	);
	for (let i = 0; i < uuids.length; i += 500) {
		await env.DB.batch(
			uuids.slice(i, i + 500).map((uuid, j) =>
				statement.bind(uuid, owner, JSON.stringify(descriptions[i + j]), JSON.stringify({ uuid, creator: owner, created_ts: 1 })),
			),
		);
	}
	return uuids;
}

// A figure of the Server-Timing header: queries, rows_read or rows_written.
export function d1Cost(res: { headers: Headers }, figure: "queries" | "rows_read" | "rows_written") {
	const match = new RegExp(`${figure}=(\\d+)`).exec(res.headers.get("server-timing") ?? "");
	if (!match) throw new Error(`no ${figure} in Server-Timing`);
	return Number(match[1]);
}

export const scan = (secret: string, query: string) => call("GET", `/twins?${query}`, { secret });

// Every page of a scan, to the end.
export async function walk(secret: string, query: string) {
	const seen: unknown[] = [];
	let cursor: string | null = null;
	let pages = 0;
	do {
		const res = await scan(secret, `${query}${cursor ? `&cursor=${cursor}` : ""}`);
		expect(res.status).toBe(200);
		seen.push(...res.body.twins);
		cursor = res.body.cursor;
		pages++;
	} while (cursor !== null);
	return { seen, pages };
}

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

// Everything a client could compare between two answers, except the request's own id, the time
// in Server-Timing, and the D1 bookmark's value (the database's state when the request ran, not
// the resource). `swap` replaces names that differ between the two requests by design.
export function fingerprint(res: Awaited<ReturnType<typeof call>>, swap: (text: string) => string = (text) => text) {
	const { trace: _, ...body } = res.body ?? {};
	const headers = [...res.headers.entries()]
		.filter(([name]) => name !== "x-request-id")
		.map(([name, value]) => [name, name === "server-timing" ? value.replace(/dur=[\d.]+/, "dur=") : name === "x-d1-bookmark" ? "bookmark" : value]);
	return JSON.parse(swap(JSON.stringify({ status: res.status, body, headers })));
}

import { env, exports } from "cloudflare:workers";
import { expect } from "vitest";

export const BASE = "https://registry.test";

type CallOptions = { secret?: string; body?: unknown; headers?: Record<string, string> };

// Every call goes through the Worker's own fetch handler, as a client's request would.
export async function call(method: string, path: string, options: CallOptions = {}) {
	const headers = new Headers(options.headers);
	if (options.secret) headers.set("authorization", options.secret);
	let body: string | undefined;
	if (options.body !== undefined) {
		body = typeof options.body === "string" ? options.body : JSON.stringify(options.body);
		headers.set("content-type", "application/json");
	}
	const response = await exports.default.fetch(new Request(BASE + path, { method, headers, body }));
	const text = await response.text();
	return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
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

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { routes as table } from "../../src/routes";
import { loadRoutes } from "../../src/http/route";
import { BASE, call, randomAddress } from "../support/requests";
import { type Account, bootstrap, createUser } from "../support/accounts";
import { seedTwins } from "../support/twins";
import { receiver, subscribeRecording } from "../support/webhooks";
import { exports } from "cloudflare:workers";

const routes = await loadRoutes(table);

// Random and hostile requests to every route: whatever arrives, the answer is never a 5xx,
// and every error is the envelope, without a stack trace.

const nasty = fc.oneof(
	fc.string({ unit: "binary", maxLength: 40 }),
	fc.constantFrom(
		"",
		" ",
		"%",
		"%E0%A4%A",
		"../../etc",
		"null",
		"0",
		"-1",
		"1e309",
		"NaN",
		"true",
		"[]",
		"{}",
		"\u0000",
		"💥".repeat(50),
		"A".repeat(5000),
		"'; DROP TABLE users; --",
		"TWIN.a == ",
		"((((((((",
		"__proto__",
		"constructor",
	),
);
const scalar = fc.oneof(fc.constant(null), fc.boolean(), fc.integer(), fc.double(), nasty);
const json = fc.letrec((tie) => ({
	value: fc.oneof(
		{ depthSize: "small" },
		scalar,
		fc.array(tie("value"), { maxLength: 4 }),
		fc.dictionary(
			fc.oneof(
				nasty,
				fc.constantFrom(
					"name",
					"role",
					"description",
					"rules",
					"statement",
					"effect",
					"actions",
					"twin",
					"callback_url",
					"topic",
					"client_secret",
					"expires",
					"validity_ts",
					"identities",
					"visibility",
					"RFID#1",
					"__proto__",
					"entries",
					"value",
					"history",
					"publish",
					"conditions",
					"transaction",
					"ref",
					"topics",
					"account",
				),
			),
			tie("value"),
			{ maxKeys: 5 },
		),
	),
})).value;
const deep = fc.integer({ min: 1, max: 20_000 }).map((n) => `{"description":{"a":${"[".repeat(n)}${"]".repeat(n)}}}`);
const body = fc.oneof(
	json.map((v) => JSON.stringify(v)),
	deep,
	nasty,
	fc.constant('{"name": "x", "role":'),
);

type Fixture = { admin: Account; ids: Record<string, string> };

function pathFor(template: string, ids: Record<string, string>, pick: (name: string) => string) {
	return template.replace(
		/:(\w+)/g,
		(_, name: string) => encodeURIComponent(pick(name)).replace(/%25/g, "%").slice(0, 300) || ids[name],
	);
}

// Each request from its own address, so that the rate limits do not turn the routes without a
// credential into a wall of 429s before their inputs are parsed.
async function send(method: string, path: string, init: { body?: string; headers: Record<string, string> }) {
	const headers = { "cf-connecting-ip": randomAddress(), ...init.headers };
	const response = await exports.default.fetch(new Request(BASE + path, { method, body: init.body, headers }));
	const text = await response.text();
	return { status: response.status, text, trace: response.headers.get("x-request-id") };
}

function expectSafe(res: { status: number; text: string; trace: string | null }) {
	expect(res.status, res.text).toBeLessThan(500);
	if (res.status >= 400) {
		const envelope = JSON.parse(res.text);
		expect(envelope).toMatchObject({ subcode: expect.any(Number), trace: res.trace, description: expect.any(String) });
		expect(Math.floor(envelope.subcode / 1000)).toBe(res.status);
	}
	expect(res.text).not.toMatch(/\bat .+\.(ts|js|mjs):\d+/);
}

describe("fuzzing every route", () => {
	it("never answers 5xx to random paths, queries, bodies and headers", async () => {
		const admin = await bootstrap();
		const [twin] = await seedTwins(admin.account, [{ a: 1 }]);
		const identity = "RFID#be744bdc";
		await call("POST", `/twins/${twin}/identities`, {
			secret: admin.secret,
			body: { identities: { [identity]: { visibility: "true" } } },
		});
		// The receiver refuses with 404: a confirmation the fuzzer resends through the real queue
		// fails at its first attempt, and nothing of it is left running after the test.
		const { res: subscribed } = await subscribeRecording(admin, {
			callback_url: `${receiver()}/r/fuzz-${crypto.randomUUID()}/404`,
		});
		const subscription = subscribed.body.subscription.uuid;
		const ids = {
			user: await createUser(admin),
			role: admin.role,
			twin,
			account: admin.account,
			ledger: "personal",
			pin: "ABCDEFGHJK",
			identity,
			subscription,
		};
		const fixture: Fixture = { admin, ids };
		const entries = { a: { value: 1, history: "INF", visibility: "true" }, b: { value: { x: [1] } } };
		expect(
			(await call("POST", `/twins/${twin}/ledgers/personal`, { secret: admin.secret, body: { entries } })).status,
		).toBe(201);
		let requests = 0;
		await fc.assert(
			fc.asyncProperty(
				fc.constantFrom(...routes),
				fc.record({
					realIds: fc.boolean(),
					param: nasty,
					query: fc.dictionary(
						fc.oneof(
							nasty,
							fc.constantFrom(
								"count",
								"cursor",
								"match",
								"details",
								"token",
								"context",
								"show_foreign",
								"show_expired",
								"entries",
								"ge",
								"le",
								"limit",
								"show_public",
								"topic",
								"status",
							),
						),
						nasty,
						{ maxKeys: 4 },
					),
					body: fc.option(body, { nil: undefined }),
					auth: fc.oneof(
						fc.constant(fixture.admin.secret),
						fc.constant(`Bearer ${fixture.admin.secret}`),
						fc.string({ unit: "grapheme-ascii", maxLength: 80 }),
						fc.constant("x".repeat(16_000)),
					),
					contentType: fc.constantFrom(
						"application/json",
						"text/plain",
						"application/x-www-form-urlencoded",
						"application/merge-patch+json",
						"application/json-patch+json",
						"",
					),
				}),
				async (route, r) => {
					const path = pathFor(route.path, fixture.ids, (name) => (r.realIds ? fixture.ids[name] : r.param));
					const query = new URLSearchParams(r.query).toString();
					const headers: Record<string, string> = { authorization: r.auth };
					if (r.contentType) headers["content-type"] = r.contentType;
					const hasBody = route.method !== "GET" && r.body !== undefined;
					requests++;
					expectSafe(
						await send(route.method, `${path}${query ? `?${query}` : ""}`, {
							body: hasBody ? r.body : undefined,
							headers,
						}),
					);
				},
			),
			{ numRuns: 4000 },
		);
		console.log(`fuzz: ${requests} requests, no 5xx`);
	}, 300_000);

	it("answers bad methods and unknown paths with the envelope", async () => {
		await fc.assert(
			fc.asyncProperty(fc.constantFrom("PUT", "OPTIONS", "TRACE", "PATCH", "POST"), nasty, async (method, tail) => {
				expectSafe(await send(method, `/${encodeURIComponent(tail)}`, { headers: {} }));
			}),
			{ numRuns: 300 },
		);
	});
});

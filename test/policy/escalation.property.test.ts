import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { allowedActions } from "../../src/policy/statement";
import { STATEMENT_VOCABULARY } from "../../src/policy/vocabulary";
import { call } from "../support/requests";
import { bootstrap, member, role, type Statement } from "../support/accounts";

// A confined user (a twin rule, an allow-list) tries random sequences of role, user and
// secret operations. Whatever it does, no user it can reach (itself, or any user it obtains
// a secret for) sees the twin its rule hides or may call an operation its role lacks.

const R = "TWIN.company == USER.company";
const ALLOWED = [
	"who_am_i",
	"get_twin",
	"scan_twins",
	"get_user",
	"get_user_role",
	"create_user_role",
	"update_user_role",
	"create_user",
	"update_user",
	"delete_user",
	"create_user_secret_pin",
	"get_user_secret",
	"update_user_secret",
	"delete_user_secret",
];
const confinedStatement: Statement = { effect: "allow", actions: ALLOWED };

const STATEMENTS: Statement[] = [
	confinedStatement,
	{ effect: "allow", actions: ["who_am_i", "get_twin", "scan_twins"] },
	{ effect: "allow", actions: [...ALLOWED, "terminate_twin"] },
	{ effect: "deny", actions: null },
];
const RULES = [
	R,
	null,
	"true",
	`(${R}) and true`,
	`(${R}) and (true) or true`,
	"owner == account",
	"TWIN.company == 'b'",
	`(${R}) and TWIN.dept == USER.dept`,
];
const DESCRIPTIONS = [{ company: "a" }, { company: "b" }, {}, { company: "a", dept: "x" }];

// Small picks, counted from the newest: what the user just made is what it goes on to use.
const pick = fc.nat({ max: 6 });
const command = fc.oneof(
	fc.record({ op: fc.constant("create_role" as const), statement: pick, rule: pick }),
	fc.record({ op: fc.constant("update_role" as const), role: pick, statement: fc.option(pick), rule: fc.option(pick) }),
	fc.record({ op: fc.constant("create_user" as const), role: pick, description: pick }),
	fc.record({
		op: fc.constant("update_user" as const),
		user: pick,
		role: fc.option(pick),
		description: fc.option(pick),
	}),
	fc.record({ op: fc.constant("take_secret" as const), user: pick }),
	fc.record({ op: fc.constant("drop_secret" as const), user: pick, delete: fc.boolean() }),
);
type Command = typeof command extends fc.Arbitrary<infer C> ? C : never;

const at = <T>(list: T[], index: number) => list[list.length - 1 - (index % list.length)];

async function world() {
	const admin = await bootstrap();
	const confinedRole = await role(admin, confinedStatement, { twin: R }, "Confined");
	const confined = await member(admin, confinedRole, { company: "a" });
	const freeRole = await role(admin, { effect: "deny", actions: null }, {}, "Free");
	const users = [
		confined.user,
		(await member(admin, confinedRole, { company: "b" })).user,
		(await member(admin, freeRole)).user,
	];
	const hidden = (await call("POST", "/twins", { secret: admin.secret, body: { description: { company: "b" } } })).body
		.uuid;
	return {
		admin,
		confined,
		roles: [confinedRole, freeRole, admin.role],
		users,
		hidden,
		held: new Map([[confined.user, confined.secret]]),
	};
}

async function run(w: Awaited<ReturnType<typeof world>>, c: Command) {
	// Taking its own secret anew replaces the one it had.
	const secret = w.held.get(w.confined.user) ?? "";
	switch (c.op) {
		case "create_role": {
			const body = { name: "Made", statement: at(STATEMENTS, c.statement), rules: { twin: at(RULES, c.rule) } };
			const res = await call("POST", "/roles", { secret, body });
			if (res.status === 201) w.roles.push(res.body.uuid);
			return res.status;
		}
		case "update_role": {
			const body: Record<string, unknown> = {};
			if (c.statement !== null) body.statement = at(STATEMENTS, c.statement);
			if (c.rule !== null) body.rules = { twin: at(RULES, c.rule) };
			return (await call("PATCH", `/roles/${at(w.roles, c.role)}`, { secret, body })).status;
		}
		case "create_user": {
			const body = { name: "made", role: at(w.roles, c.role), description: at(DESCRIPTIONS, c.description) };
			const res = await call("POST", "/users", { secret, body });
			if (res.status === 201) w.users.push(res.body.uuid);
			return res.status;
		}
		case "update_user": {
			const body: Record<string, unknown> = {};
			if (c.role !== null) body.role = at(w.roles, c.role);
			if (c.description !== null) body.description = at(DESCRIPTIONS, c.description);
			return (await call("PATCH", `/users/${at(w.users, c.user)}`, { secret, body })).status;
		}
		case "take_secret": {
			const user = at(w.users, c.user);
			const pin = await call("POST", `/users/${user}/secrets`, { secret, body: {} });
			if (pin.status !== 201) return pin.status;
			const redeemed = await call("POST", `/secrets/${w.admin.account}/${pin.body.pin}`);
			if (redeemed.status === 201) w.held.set(user, redeemed.body.secret);
			return redeemed.status;
		}
		case "drop_secret": {
			const path = `/users/${at(w.users, c.user)}/secrets`;
			const body = c.delete ? undefined : { validity_ts: 1 };
			return (await call(c.delete ? "DELETE" : "PATCH", path, { secret, body })).status;
		}
	}
}

const lacking = new Set(STATEMENT_VOCABULARY.filter((name) => !ALLOWED.includes(name)));

describe("a confined user's random operations", () => {
	it("never make the hidden twin visible, or an operation its role lacks available, to a user it can reach", async () => {
		await fc.assert(
			fc.asyncProperty(fc.array(command, { minLength: 1, maxLength: 8 }), async (commands) => {
				const w = await world();
				for (const c of commands) expect([200, 201, 401, 403, 404, 409]).toContain(await run(w, c));
				for (const [user, secret] of w.held) {
					if ((await call("GET", "/whoami", { secret })).status !== 200) continue;
					expect((await call("GET", `/twins/${w.hidden}`, { secret })).status).toBe(404);
					const match = new URLSearchParams({ match: `twin == '${w.hidden}'` });
					expect((await call("GET", `/twins?${match}`, { secret })).body.twins).toEqual([]);
					const held = (await call("GET", `/users/${user}`, { secret: w.admin.secret })).body.role;
					const { statement } = (await call("GET", `/roles/${held}`, { secret: w.admin.secret })).body;
					expect(allowedActions(statement, STATEMENT_VOCABULARY).filter((name) => lacking.has(name))).toEqual([]);
				}
			}),
			{ numRuns: 20 },
		);
	}, 60_000);
});

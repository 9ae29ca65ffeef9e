import { describe, expect, it } from "vitest";
import type { Caller } from "../../../src/base/caller";
import {
	checkManageable,
	checkRoleGrant,
	isAdministrator,
	mayChangeOwnDescription,
	mayReadLedgerInRules,
} from "../../../src/policy/grant";
import { STATEMENT_VOCABULARY } from "../../../src/policy/vocabulary";

const everything = { effect: "deny" as const, actions: null };
const noRules = { twin: null, entry: null, identity: null };
const R = "TWIN.company == USER.company";

function caller(twin: string | null, description: Record<string, unknown> = { company: "a" }): Caller {
	return {
		account: "acc",
		user: "me",
		role: "my-role",
		statement: everything,
		rules: { ...noRules, twin },
		description,
	};
}
const grantTwin = (c: Caller, twin: string | null) =>
	checkRoleGrant(c, { statement: c.statement, rules: { ...noRules, twin } }, STATEMENT_VOCABULARY).ok;

describe("granting rules", () => {
	it("allows the caller's own rule or a narrowing of it by a top-level and, decided on the syntax tree", () => {
		const c = caller(R);
		expect(grantTwin(c, R)).toBe(true);
		expect(grantTwin(c, `  TWIN.company==USER.company `)).toBe(true);
		expect(grantTwin(c, `(${R}) and twin_status == 'alive'`)).toBe(true);
		expect(grantTwin(c, `(${R}) and (true) or true`)).toBe(false);
		expect(grantTwin(c, `${R} or true`)).toBe(false);
		expect(grantTwin(c, `true and (${R})`)).toBe(false);
		expect(grantTwin(c, null)).toBe(false);
		expect(grantTwin(c, "true")).toBe(false);
	});

	it("lets a caller without a rule grant none, or its own account's twins, narrowed or not", () => {
		// Not the administrator: one operation short of everything.
		const c = { ...caller(null), statement: { effect: "deny" as const, actions: ["delete_user"] } };
		expect(isAdministrator(c)).toBe(false);
		expect(grantTwin(c, null)).toBe(true);
		expect(grantTwin(c, "owner == account")).toBe(true);
		expect(grantTwin(c, "(owner == account) and TWIN.x == 1")).toBe(true);
		expect(grantTwin(c, "owner == account or true")).toBe(false);
		expect(grantTwin(c, R)).toBe(false);
	});

	it("lets a caller without an entry or identity rule grant only none of that kind", () => {
		// `owner == account` would admit other accounts' public entries and identities on the
		// caller's account's twins, which a null rule never shows.
		const c = { ...caller(null), statement: { effect: "deny" as const, actions: ["delete_user"] } };
		for (const kind of ["entry", "identity"] as const) {
			const grant = (rule: string | null) =>
				checkRoleGrant(c, { statement: c.statement, rules: { ...noRules, [kind]: rule } }, STATEMENT_VOCABULARY);
			expect(grant(null).ok).toBe(true);
			expect(grant("owner == account")).toEqual({ ok: false, reason: "rule", kind });
			expect(grant("(owner == account) and entry_name == 'x'").ok).toBe(false);
		}
	});

	it("lets the administrator grant any rule", () => {
		const admin = { ...caller(null), rules: noRules };
		expect(isAdministrator(admin)).toBe(true);
		expect(grantTwin(admin, R)).toBe(true);
		expect(isAdministrator({ ...admin, statement: { effect: "allow", actions: ["get_twin"] } })).toBe(false);
	});

	it("refuses a rule reading `role` under another role, which would evaluate otherwise", () => {
		const c = caller("role == 'my-role'");
		expect(grantTwin(c, "role == 'my-role'")).toBe(false);
		expect(grantTwin(caller(R), `(${R}) and role == 'x'`)).toBe(true);
		expect(checkRoleGrant(c, { uuid: "my-role", statement: everything, rules: c.rules }, STATEMENT_VOCABULARY).ok).toBe(
			true,
		);
	});
});

describe("managing a user", () => {
	const role = { uuid: "my-role", statement: everything, rules: { ...noRules, twin: R } };

	it("needs the user's USER inputs to equal the caller's", () => {
		const c = caller(R);
		expect(
			checkManageable(c, { uuid: "peer", role, description: { company: "a", other: 1 } }, STATEMENT_VOCABULARY).ok,
		).toBe(true);
		expect(
			checkManageable(c, { uuid: "peer", role, description: { company: "b" } }, STATEMENT_VOCABULARY),
		).toMatchObject({
			ok: false,
			reason: "inputs",
		});
		expect(checkManageable(c, { uuid: "peer", role, description: {} }, STATEMENT_VOCABULARY).ok).toBe(false);
	});

	it("lets inputs read only by a narrowing differ: they can only hide more", () => {
		const c = caller(R, { company: "a", dept: "x" });
		const narrowed = { ...role, rules: { ...noRules, twin: `(${R}) and TWIN.dept == USER.dept` } };
		expect(
			checkManageable(
				c,
				{ uuid: "peer", role: narrowed, description: { company: "a", dept: "y" } },
				STATEMENT_VOCABULARY,
			).ok,
		).toBe(true);
		expect(
			checkManageable(
				c,
				{ uuid: "peer", role: narrowed, description: { company: "b", dept: "x" } },
				STATEMENT_VOCABULARY,
			).ok,
		).toBe(false);
	});

	it("refuses another user when the rules read `user`", () => {
		const c = caller("user == 'me'");
		const own = { ...role, rules: c.rules };
		expect(checkManageable(c, { uuid: "me", role: own, description: c.description }, STATEMENT_VOCABULARY).ok).toBe(
			true,
		);
		expect(checkManageable(c, { uuid: "peer", role: own, description: c.description }, STATEMENT_VOCABULARY).ok).toBe(
			false,
		);
	});

	it("lets a user change its own description only when its rules read no USER variable", () => {
		expect(mayChangeOwnDescription(caller(R))).toBe(false);
		expect(mayChangeOwnDescription(caller("TWIN.x == 1"))).toBe(true);
		expect(mayChangeOwnDescription({ ...caller(null), rules: noRules })).toBe(true);
	});
});

describe("rules that read LEDGER", () => {
	it("are written only by a writer that sees every entry: a role without an entry rule", () => {
		expect(mayReadLedgerInRules({ rules: noRules })).toBe(true);
		expect(mayReadLedgerInRules({ rules: { ...noRules, twin: R } })).toBe(true);
		expect(mayReadLedgerInRules({ rules: { ...noRules, entry: "true" } })).toBe(false);
		expect(mayReadLedgerInRules({ rules: { ...noRules, entry: "entry_name != 'salary'" } })).toBe(false);
	});
});

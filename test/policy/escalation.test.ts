import { describe, expect, it } from "vitest";
import { STATEMENT_VOCABULARY } from "../../src/policy/vocabulary";
import { call, expectError } from "../support/requests";
import { type Account, bootstrap, createUser, member, role, type Statement, userWithRules } from "../support/accounts";
import { newTwin } from "../support/twins";
import { addEntries, ledger } from "../support/ledgers";

// Each attack of a hostile user of a real account, through the Worker's fetch: the refusal,
// and the state it leaves.

const SECRET_OPS = ["get_user", "get_user_secret", "update_user_secret", "delete_user_secret"];
const COMPANY = "TWIN.company == USER.company";
const everything: Statement = { effect: "deny", actions: null };

describe("another user's secret", () => {
	it("cannot be read, changed or deleted by a user that could not grant its role; the admin keeps working", async () => {
		const admin = await bootstrap();
		const weak = await member(admin, await role(admin, { effect: "allow", actions: SECRET_OPS }));
		const path = `/users/${admin.user}/secrets`;
		expectError(await call("GET", path, { secret: weak.secret }), 403, 403102);
		expectError(await call("PATCH", path, { secret: weak.secret, body: { validity_ts: 1 } }), 403, 403102);
		expectError(await call("DELETE", path, { secret: weak.secret }), 403, 403102);
		expect((await call("GET", "/whoami", { secret: admin.secret })).status).toBe(200);
		expect((await call("GET", path, { secret: admin.secret })).body.validity_ts).toBeNull();
	});

	it("stays the user's own to read, change and delete", async () => {
		const admin = await bootstrap();
		const weak = await member(admin, await role(admin, { effect: "allow", actions: SECRET_OPS }));
		const path = `/users/${weak.user}/secrets`;
		expect((await call("GET", path, { secret: weak.secret })).status).toBe(200);
		const future = Math.round(Date.now() / 1000) + 3600;
		expect((await call("PATCH", path, { secret: weak.secret, body: { validity_ts: future } })).body.validity_ts).toBe(
			future,
		);
		expect((await call("DELETE", path, { secret: weak.secret })).status).toBe(200);
		expectError(await call("GET", "/whoami", { secret: weak.secret }), 401, 401102);
	});
});

// A user confined to its company's twins, allowed to manage roles, users and PINs.
async function confinedSetup() {
	const admin = await bootstrap();
	const confinedRole = await role(admin, everything, { twin: COMPANY }, "Confined");
	const confined = await member(admin, confinedRole, { company: "a" });
	const hidden = (
		await call("POST", "/twins", { secret: admin.secret, body: { description: { company: "b", code: "secret" } } })
	).body.uuid;
	const shown = (await call("POST", "/twins", { secret: admin.secret, body: { description: { company: "a" } } })).body
		.uuid;
	expectError(await call("GET", `/twins/${hidden}`, { secret: confined.secret }), 404, 404102);
	return { admin, confined, confinedRole, hidden, shown };
}

describe("a user confined by a twin rule", () => {
	it("cannot widen its own role's rule", async () => {
		const { confined, confinedRole, hidden } = await confinedSetup();
		for (const twin of ["true", null, `(${COMPANY}) or true`, `${COMPANY} or true`, "owner == account"]) {
			const res = await call("PATCH", `/roles/${confinedRole}`, { secret: confined.secret, body: { rules: { twin } } });
			expectError(res, 403, 403102);
		}
		expectError(await call("GET", `/twins/${hidden}`, { secret: confined.secret }), 404, 404102);
	});

	it("may narrow it, with its own rule and more", async () => {
		const { confined, confinedRole } = await confinedSetup();
		const narrower = `(${COMPANY}) and twin_status == 'alive'`;
		const res = await call("PATCH", `/roles/${confinedRole}`, {
			secret: confined.secret,
			body: { rules: { twin: narrower } },
		});
		expect(res.status).toBe(200);
	});

	it("cannot make a rule-free role with its statement, nor take one", async () => {
		const { admin, confined, hidden } = await confinedSetup();
		const res = await call("POST", "/roles", {
			secret: confined.secret,
			body: { name: "Free", statement: everything },
		});
		expectError(res, 403, 403102);
		const free = await role(admin, everything, {}, "Free");
		expectError(
			await call("PATCH", `/users/${confined.user}`, { secret: confined.secret, body: { role: free } }),
			403,
			403102,
		);
		expectError(await call("GET", `/twins/${hidden}`, { secret: confined.secret }), 404, 404102);
	});

	it("cannot change its own description when its rules read USER", async () => {
		const { confined, hidden } = await confinedSetup();
		const res = await call("PATCH", `/users/${confined.user}`, {
			secret: confined.secret,
			body: { description: { company: "b" } },
		});
		expectError(res, 403, 403102);
		expect((await call("GET", `/users/${confined.user}`, { secret: confined.secret })).body.description).toEqual({
			company: "a",
		});
		expectError(await call("GET", `/twins/${hidden}`, { secret: confined.secret }), 404, 404102);
	});

	it("cannot get a PIN for a peer that sees more, only for one that sees the same", async () => {
		const { admin, confined, confinedRole } = await confinedSetup();
		const free = await createUser(admin, await role(admin, everything, {}, "Free"));
		const otherCompany = (await member(admin, confinedRole, { company: "b" })).user;
		const sameCompany = (await member(admin, confinedRole, { company: "a" })).user;
		expectError(await call("POST", `/users/${free}/secrets`, { secret: confined.secret, body: {} }), 403, 403102);
		expectError(
			await call("POST", `/users/${otherCompany}/secrets`, { secret: confined.secret, body: {} }),
			403,
			403102,
		);
		expect((await call("POST", `/users/${sameCompany}/secrets`, { secret: confined.secret, body: {} })).status).toBe(
			201,
		);
		// Nor create one that sees more, nor move a peer to another company.
		const created = await call("POST", "/users", {
			secret: confined.secret,
			body: { name: "b", role: confinedRole, description: { company: "b" } },
		});
		expectError(created, 403, 403102);
		const moved = await call("PATCH", `/users/${sameCompany}`, {
			secret: confined.secret,
			body: { description: { company: "b" } },
		});
		expectError(moved, 403, 403102);
	});

	it("cannot change a role so that its holders see what the caller does not", async () => {
		const { admin, confined } = await confinedSetup();
		const plain = await role(admin, everything, { twin: `(${COMPANY}) and true` }, "Plain");
		await member(admin, plain, { company: "b" });
		const res = await call("PATCH", `/roles/${plain}`, { secret: confined.secret, body: { rules: { twin: COMPANY } } });
		expectError(res, 403, 403102);
	});
});

describe("a user shown other accounts' entries", () => {
	// Account A gates an entry on a shared twin by the reader's USER.clearance; account B's
	// partner role has an entry rule, so A's visibility rule decides what its holders see.
	async function partner(clearance: string) {
		const a = await bootstrap();
		const b = await bootstrap();
		const twin = await newTwin(a.secret, { shared: true });
		await addEntries(a.secret, twin, {
			gated: { value: "for high clearance", visibility: "USER.clearance == 'high'" },
		});
		const user = await userWithRules(b, { twin: "TWIN.shared == true", entry: "true" }, { clearance });
		const sees = async (secret: string) =>
			Object.keys((await call("GET", ledger(twin, a.account), { secret })).body.entries);
		return { b, user, sees };
	}

	it("cannot change its own description, which that account's rule reads", async () => {
		const { user, sees } = await partner("low");
		const raise = await call("PATCH", `/users/${user.user}`, {
			secret: user.secret,
			body: { description: { clearance: "high" } },
		});
		expectError(raise, 403, 403102);
		expect(await sees(user.secret)).toEqual([]);
	});

	it("cannot give a user of its role another description, only its own", async () => {
		const { b, user, sees } = await partner("low");
		const made = await call("POST", "/users", {
			secret: user.secret,
			body: { name: "high", role: user.role, description: { clearance: "high" } },
		});
		expectError(made, 403, 403102);
		const same = await call("POST", "/users", {
			secret: user.secret,
			body: { name: "peer", role: user.role, description: { clearance: "low" } },
		});
		expect(same.status).toBe(201);
		// The administrator decides what its users see, including through other accounts' rules.
		const admin = await call("PATCH", `/users/${user.user}`, {
			secret: b.secret,
			body: { description: { clearance: "high" } },
		});
		expect(admin.status).toBe(200);
		expect(await sees(user.secret)).toEqual(["gated"]);
	});
});

describe("notifications", () => {
	it("are granted to other accounts only by a role that sees its account's data whole: a grantee reads with its own rules", async () => {
		const { admin, confined } = await confinedSetup();
		const entryConfined = await member(
			admin,
			await role(admin, everything, { entry: "entry_name == 'public'" }, "Entries"),
		);
		const grantee = await bootstrap();
		for (const user of [confined, entryConfined]) {
			const res = await call("PATCH", `/notifications/webhooks/access/accounts/${grantee.account}`, {
				secret: user.secret,
				body: { topics: ["entries"] },
			});
			expectError(res, 403, 403102);
		}
		expect((await call("GET", "/notifications/webhooks/access", { secret: admin.secret })).body.accounts).toEqual({});
		// Subscribing is theirs: what each message shows them is filtered (notifications/confined.test.ts).
	});
});

describe("the administrator", () => {
	it("is not within reach of a role that allows every operation by name", async () => {
		const admin = await bootstrap();
		const named = await member(admin, await role(admin, { effect: "allow", actions: [...STATEMENT_VOCABULARY] }));
		// Not the administrator: it may not grant rules wider than its own...
		expectError(
			await call("POST", "/roles", { secret: named.secret, body: { name: "Wide", rules: { twin: "true" } } }),
			403,
			403102,
		);
		// ...nor hand out, take over or change the role that may.
		expectError(await call("POST", `/users/${admin.user}/secrets`, { secret: named.secret, body: {} }), 403, 403102);
		expectError(
			await call("POST", "/users", { secret: named.secret, body: { name: "n", role: admin.role } }),
			403,
			403102,
		);
		expectError(await call("POST", "/roles", { secret: named.secret, body: { name: "Everything" } }), 403, 403102);
		expectError(
			await call("PATCH", `/users/${named.user}`, { secret: named.secret, body: { role: admin.role } }),
			403,
			403102,
		);
		// What it may: an allow list within its own.
		expect(
			(
				await call("POST", "/roles", {
					secret: named.secret,
					body: { name: "Some", statement: { effect: "allow", actions: ["get_twin"] } },
				})
			).status,
		).toBe(201);
	});

	it("grants any rules, such as cross-account sharing by company", async () => {
		const admin = await bootstrap();
		const shared = await role(admin, everything, { twin: "TWIN.company == USER.company" }, "Shared");
		const user = await member(admin, shared, { company: "x" });
		expect(
			(await call("PATCH", `/users/${user.user}`, { secret: admin.secret, body: { description: { company: "y" } } }))
				.status,
		).toBe(200);
		expect(
			(await call("PATCH", `/users/${admin.user}`, { secret: admin.secret, body: { description: { company: "y" } } }))
				.status,
		).toBe(200);
	});
});

describe("an unredeemed PIN", () => {
	async function pinFor(issuer: Account, user: string) {
		const res = await call("POST", `/users/${user}/secrets`, { secret: issuer.secret, body: {} });
		expect(res.status).toBe(201);
		return res.body.pin as string;
	}

	it("dies when an admin promotes the user it was issued for", async () => {
		const admin = await bootstrap();
		const issuerRole = await role(
			admin,
			{ effect: "allow", actions: ["create_user_secret_pin", "who_am_i"] },
			{},
			"Issuer",
		);
		const issuer = await member(admin, issuerRole);
		const weak = await createUser(admin, issuerRole);
		const pin = await pinFor(issuer, weak);
		expect((await call("PATCH", `/users/${weak}`, { secret: admin.secret, body: { role: admin.role } })).status).toBe(
			200,
		);
		expectError(await call("POST", `/secrets/${admin.account}/${pin}`), 404, 404103);
	});

	it("dies when the role its user holds is widened, or the user's description changes", async () => {
		const admin = await bootstrap();
		const issuerRole = await role(
			admin,
			{ effect: "allow", actions: ["create_user_secret_pin", "who_am_i"] },
			{},
			"Issuer",
		);
		const issuer = await member(admin, issuerRole);
		const weak = await createUser(admin, issuerRole);
		const first = await pinFor(issuer, weak);
		await call("PATCH", `/roles/${issuerRole}`, { secret: admin.secret, body: { statement: everything } });
		expectError(await call("POST", `/secrets/${admin.account}/${first}`), 404, 404103);
		const second = await pinFor(admin, weak);
		await call("PATCH", `/users/${weak}`, { secret: admin.secret, body: { description: { site: "x" } } });
		expectError(await call("POST", `/secrets/${admin.account}/${second}`), 404, 404103);
		// A rename changes nothing it grants: the PIN survives it.
		const third = await pinFor(admin, weak);
		await call("PATCH", `/users/${weak}`, { secret: admin.secret, body: { name: "renamed" } });
		expect((await call("POST", `/secrets/${admin.account}/${third}`)).status).toBe(201);
	});
});

describe("the statement vocabulary", () => {
	it("accepts the interface's example allow-list, and original names not routed here", async () => {
		const admin = await bootstrap();
		const actions = [
			"get_twin",
			"get_twin_identities",
			"get_twin_identity",
			"get_twin_ledger_entry",
			"get_user",
			"get_user_role",
		];
		await role(admin, { effect: "allow", actions });
		await role(admin, { effect: "deny", actions: ["get_twin_docs", "create_batch"] });
		const res = await call("POST", "/roles", {
			secret: admin.secret,
			body: { name: "Bad", statement: { effect: "allow", actions: ["nope"] } },
		});
		expectError(res, 400, 400101);
	});
});

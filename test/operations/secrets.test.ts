import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/requests";
import { bootstrap, createUser, issueSecret, userWith } from "../support/accounts";
import { allShards, dbOf } from "../support/shards";

async function requestPin(secret: string, user: string, body: unknown = {}) {
	const res = await call("POST", `/users/${user}/secrets`, { secret, body });
	expect(res.status).toBe(201);
	expect(res.body.pin).toMatch(/^[A-Z0-9]{8,}$/);
	return res.body.pin as string;
}

// Every value of every row of every table of every shard, as text: what an attacker with the
// databases has.
async function everythingStored() {
	const shards = await Promise.all(
		allShards().map(async (db) => {
			const { results: tables } = await db
				.prepare(
					"SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%'",
				)
				.all<{ name: string }>();
			const dumps = await Promise.all(tables.map(({ name }) => db.prepare(`SELECT * FROM "${name}"`).all()));
			return dumps.map((d) => d.results);
		}),
	);
	return JSON.stringify(shards);
}

describe("issuing a secret by PIN", () => {
	it("redeems a PIN once for a secret shown only in that answer", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const validity = Math.round(Date.now() / 1000) + 86_400;
		const pin = await requestPin(admin.secret, user, { validity_ts: validity });

		const redeemed = await call("POST", `/secrets/${admin.account}/${pin}`);
		expect(redeemed.status).toBe(201);
		expect(redeemed.body).toEqual({
			account: admin.account,
			user,
			secret: expect.stringMatching(/^[A-Za-z0-9_-]{64}$/),
			validity_ts: validity,
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
		});
		const { secret } = redeemed.body;
		expect((await call("GET", "/whoami", { secret })).body.user).toBe(user);

		expectError(await call("POST", `/secrets/${admin.account}/${pin}`), 404, 404103);

		const record = await call("GET", `/users/${user}/secrets`, { secret: admin.secret });
		expect(record.body).toEqual({
			fingerprint: secret.slice(-4),
			account: admin.account,
			user,
			validity_ts: validity,
			created_ts: redeemed.body.created_ts,
			updated_ts: redeemed.body.updated_ts,
		});
		expect(JSON.stringify(record.body)).not.toContain(secret);
	});

	it("stores neither the secret nor the PIN in plain text", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const pin = await requestPin(admin.secret, user);
		expect(await everythingStored()).not.toContain(pin);
		const { secret } = (await call("POST", `/secrets/${admin.account}/${pin}`)).body;
		const stored = await everythingStored();
		expect(stored).not.toContain(secret);
		expect(stored).not.toContain(admin.secret);
		const row = await dbOf(user)
			.prepare("SELECT hash, fingerprint FROM user_secrets WHERE user = ?")
			.bind(user)
			.first();
		expect(row).toEqual({ hash: expect.stringMatching(/^[0-9a-f]{64}$/), fingerprint: secret.slice(-4) });
	});

	it("refuses an expired PIN", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const pin = await requestPin(admin.secret, user);
		await dbOf(user)
			.prepare("UPDATE secret_pins SET expires_ts = ? WHERE user = ?")
			.bind(Date.now() / 1000 - 1, user)
			.run();
		expectError(await call("POST", `/secrets/${admin.account}/${pin}`), 404, 404103);
	});

	it("answers the same 404 for a wrong PIN, a malformed one and another account's path", async () => {
		const admin = await bootstrap();
		const other = await bootstrap();
		const user = await createUser(admin);
		const pin = await requestPin(admin.secret, user);
		expectError(await call("POST", `/secrets/${admin.account}/ZZZZZZZZZZ`), 404, 404103);
		expectError(await call("POST", `/secrets/${admin.account}/short`), 404, 404103);
		expectError(await call("POST", `/secrets/not-an-account/${pin}`), 404, 404103);
		expectError(await call("POST", `/secrets/${other.account}/${pin}`), 404, 404103);
		expect((await call("POST", `/secrets/${admin.account}/${pin}`)).status).toBe(201);
	});

	it("replaces the previous PIN and the previous secret", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const first = await issueSecret(admin, user);
		const stalePin = await requestPin(admin.secret, user);
		const freshPin = await requestPin(admin.secret, user);
		expectError(await call("POST", `/secrets/${admin.account}/${stalePin}`), 404, 404103);
		const second = (await call("POST", `/secrets/${admin.account}/${freshPin}`)).body.secret;
		expectError(await call("GET", "/whoami", { secret: first }), 401, 401102);
		expect((await call("GET", "/whoami", { secret: second })).status).toBe(200);
	});

	it.each([
		["a string", { validity_ts: "tomorrow" }, "validity_ts"],
		["negative", { validity_ts: -5 }, "validity_ts"],
		["in the past", { validity_ts: 1 }, "validity_ts"],
		["an unknown field", { pin: "ABCDEFGH" }, "pin"],
	])("answers 400 when validity_ts is %s", async (_case, body, path) => {
		const admin = await bootstrap();
		const res = await call("POST", `/users/${admin.user}/secrets`, { secret: admin.secret, body });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path, message: expect.any(String) });
	});

	it("answers 404 for a PIN request for an unknown user and 400 for a malformed one", async () => {
		const admin = await bootstrap();
		expectError(await call("POST", `/users/${crypto.randomUUID()}/secrets`, { secret: admin.secret }), 404, 404102);
		expectError(await call("POST", "/users/x/secrets", { secret: admin.secret }), 400, 400101);
	});

	it("does not let a narrower role issue a PIN for a broader user", async () => {
		const admin = await bootstrap();
		const helpdesk = await userWith(admin, { effect: "allow", actions: ["create_user_secret_pin"] });
		expectError(await call("POST", `/users/${admin.user}/secrets`, { secret: helpdesk.secret }), 403, 403102);
		expect((await call("POST", `/users/${helpdesk.user}/secrets`, { secret: helpdesk.secret })).status).toBe(201);
	});
});

describe("update_user_secret", () => {
	it("sets and clears the expiry", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		const later = Math.round(Date.now() / 1000) + 60;
		const set = await call("PATCH", `/users/${user}/secrets`, { secret: admin.secret, body: { validity_ts: later } });
		expect(set.body).toMatchObject({ validity_ts: later, fingerprint: secret.slice(-4) });
		const cleared = await call("PATCH", `/users/${user}/secrets`, {
			secret: admin.secret,
			body: { validity_ts: null },
		});
		expect(cleared.body.validity_ts).toBeNull();
		expect((await call("GET", "/whoami", { secret })).status).toBe(200);
	});

	it.each([
		["missing", {}],
		["a string", { validity_ts: "soon" }],
	])("answers 400 when validity_ts is %s", async (_case, body) => {
		const admin = await bootstrap();
		const res = await call("PATCH", `/users/${admin.user}/secrets`, { secret: admin.secret, body });
		expectError(res, 400, 400101);
		expect(res.body.details).toContainEqual({ path: "validity_ts", message: expect.any(String) });
	});
});

describe("delete_user_secret", () => {
	it("answers the User Secret record and refuses the secret from the next request on", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const validity = Math.round(Date.now() / 1000) + 3600;
		const secret = await issueSecret(admin, user, validity);

		const res = await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret });
		expect(res.status).toBe(200);
		expect(res.body).toEqual({
			fingerprint: secret.slice(-4),
			account: admin.account,
			user,
			validity_ts: validity,
			created_ts: expect.any(Number),
			updated_ts: expect.any(Number),
		});
		expectError(await call("GET", "/whoami", { secret }), 401, 401102);
		expectError(await call("GET", `/users/${user}/secrets`, { secret: admin.secret }), 404, 404102);
		expectError(await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret }), 404, 404102);
	});

	it("lets a user delete its own secret, after which that user is locked out", async () => {
		const admin = await bootstrap();
		const res = await call("DELETE", `/users/${admin.user}/secrets`, { secret: admin.secret });
		expect(res.status).toBe(200);
		expectError(await call("GET", "/whoami", { secret: admin.secret }), 401, 401102);
	});

	it("answers 400 for a malformed user and 404 for a user without a secret", async () => {
		const admin = await bootstrap();
		const bad = await call("DELETE", "/users/123/secrets", { secret: admin.secret });
		expectError(bad, 400, 400101);
		expect(bad.body.details).toEqual([{ path: "user", message: expect.any(String) }]);
		const user = await createUser(admin);
		expectError(await call("DELETE", `/users/${user}/secrets`, { secret: admin.secret }), 404, 404102);
	});
});

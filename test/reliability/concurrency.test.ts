import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap, createUser, issueSecret } from "../support/accounts";
import { seedTwins } from "../support/twins";
import { dbOf } from "../support/shards";

describe("concurrent requests in one account", () => {
	it("role writes, role assignments and deletions never leave a user with a missing role", async () => {
		const admin = await bootstrap();
		const roles = await Promise.all(
			Array.from({ length: 6 }, (_, i) => call("POST", "/roles", { secret: admin.secret, body: { name: `R${i}` } })),
		);
		const users = await Promise.all(Array.from({ length: 6 }, () => createUser(admin)));
		await Promise.all([
			...users.map((user, i) =>
				call("PATCH", `/users/${user}`, { secret: admin.secret, body: { role: roles[i].body.uuid } }),
			),
			...roles.map((role) => call("DELETE", `/roles/${role.body.uuid}`, { secret: admin.secret })),
			...roles.map((role, i) =>
				call("PATCH", `/roles/${role.body.uuid}`, { secret: admin.secret, body: { name: `Renamed ${i}` } }),
			),
		]);
		const orphans = await dbOf(admin.account)
			.prepare("SELECT count(*) AS n FROM users WHERE account = ? AND role NOT IN (SELECT uuid FROM roles)")
			.bind(admin.account)
			.first<{ n: number }>();
		expect(orphans?.n).toBe(0);
	});

	it("a secret deleted by many requests at once is deleted once, and refused afterwards", async () => {
		const admin = await bootstrap();
		const user = await createUser(admin);
		const secret = await issueSecret(admin, user);
		const results = await Promise.all(
			Array.from({ length: 10 }, () => call("DELETE", `/users/${user}/secrets`, { secret: admin.secret })),
		);
		expect(results.filter((r) => r.status === 200)).toHaveLength(1);
		expect(results.filter((r) => r.status === 404)).toHaveLength(9);
		expect((await call("GET", "/whoami", { secret })).status).toBe(401);
	});

	it("scans running while twins are terminated and described see whole records", async () => {
		const admin = await bootstrap();
		const uuids = await seedTwins(
			admin.account,
			Array.from({ length: 60 }, (_, i) => ({ i })),
		);
		const writes = uuids.flatMap((uuid, i) =>
			i % 2
				? [call("DELETE", `/twins/${uuid}`, { secret: admin.secret })]
				: [call("PATCH", `/twins/${uuid}`, { secret: admin.secret, body: { description: { i, changed: true } } })],
		);
		const scans = Array.from({ length: 6 }, () =>
			call("GET", "/twins?count=1000&details=true", { secret: admin.secret }),
		);
		const [written, scanned] = await Promise.all([Promise.all(writes), Promise.all(scans)]);
		expect(written.every((r) => r.status === 200)).toBe(true);
		for (const scan of scanned) {
			expect(scan.body.twins).toHaveLength(60);
			for (const twin of scan.body.twins) {
				// A terminated twin carries its certificate; a live one has none.
				expect(twin.status === "terminated").toBe(twin.termination_certificate !== null);
			}
		}
		const after = (await call("GET", "/twins?count=1000&details=true", { secret: admin.secret })).body.twins;
		expect(after.filter((t: { status: string }) => t.status === "terminated")).toHaveLength(30);
		expect(after.filter((t: { description: { changed?: boolean } }) => t.description.changed)).toHaveLength(30);
	});
});

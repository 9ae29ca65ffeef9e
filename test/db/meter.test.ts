import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { D1Meter } from "../../src/db/meter";
import { roles, users } from "../../src/db/schema";
import { bootstrap } from "../support/accounts";

// Typed selects go through the meter's raw(), which rebuilds column order from row objects.
describe("D1Meter", () => {
	it("refuses a select of two columns of the same name instead of shifting the values", async () => {
		const admin = await bootstrap();
		const meter = new D1Meter();
		const db = database(meter.wrap(env.DB));
		const query = db
			.select({ user: users.uuid, role: roles.uuid, name: users.name })
			.from(users)
			.innerJoin(roles, eq(roles.uuid, users.role))
			.where(eq(users.uuid, admin.user));
		// drizzle wraps the meter's error as the cause of its own "Failed query".
		const error = await query.then(
			() => null,
			(e: Error) => e,
		);
		expect((error?.cause as Error | undefined)?.message).toMatch(
			/selects 3 columns but its rows have 2: two selected columns share a name/,
		);
	});

	it("answers every column in its place once one of them has an alias", async () => {
		const admin = await bootstrap();
		const meter = new D1Meter();
		const db = database(meter.wrap(env.DB));
		const [row] = await db
			.select({ user: users.uuid, role: sql<string>`${roles.uuid}`.as("role_uuid"), name: users.name })
			.from(users)
			.innerJoin(roles, eq(roles.uuid, users.role))
			.where(eq(users.uuid, admin.user));
		const stored = await env.DB.prepare("SELECT role, name FROM users WHERE uuid = ?")
			.bind(admin.user)
			.first<{ role: string; name: string }>();
		expect(row).toEqual({ user: admin.user, role: stored?.role, name: stored?.name });
		expect(meter.queries).toBe(1);
	});
});

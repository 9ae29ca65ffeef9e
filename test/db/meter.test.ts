import { env } from "cloudflare:workers";
import { eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { D1Meter } from "../../src/db/meter";
import { roles, users } from "../../src/db/schema";
import { bootstrap } from "../support/accounts";
import { bindingOf, dbOf } from "../support/shards";

// Typed selects go through the meter's raw(), which rebuilds column order from row objects.
describe("D1Meter", () => {
	it("refuses a select of two columns of the same name instead of shifting the values", async () => {
		const admin = await bootstrap();
		const meter = new D1Meter();
		const db = database(meter.wrap(dbOf(admin.account), bindingOf(admin.account)));
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
		const db = database(meter.wrap(dbOf(admin.account), bindingOf(admin.account)));
		const [row] = await db
			.select({ user: users.uuid, role: sql<string>`${roles.uuid}`.as("role_uuid"), name: users.name })
			.from(users)
			.innerJoin(roles, eq(roles.uuid, users.role))
			.where(eq(users.uuid, admin.user));
		const stored = await dbOf(admin.account)
			.prepare("SELECT role, name FROM users WHERE uuid = ?")
			.bind(admin.user)
			.first<{ role: string; name: string }>();
		expect(row).toEqual({ user: admin.user, role: stored?.role, name: stored?.name });
		expect(meter.queries).toBe(1);
	});

	it("counts a round trip per statement run alone and one per batch, whatever its length", async () => {
		const admin = await bootstrap();
		const meter = new D1Meter();
		const d1 = meter.wrap(dbOf(admin.account), bindingOf(admin.account));
		await d1.prepare("SELECT 1").run();
		await d1.prepare("SELECT 2").first();
		await d1.batch([d1.prepare("SELECT 3"), d1.prepare("SELECT 4"), d1.prepare("SELECT 5")]);
		expect([meter.queries, meter.calls]).toEqual([5, 3]);
		// A batch of statements the caller must not see the cost of is no round trip of its.
		await d1.batch([dbOf(admin.account).prepare("SELECT 6")]);
		expect([meter.queries, meter.calls]).toEqual([5, 3]);
		expect(meter.serverTiming()).toMatch(/desc="queries=5 rows_read=\d+ rows_written=0 calls=3"$/);
		expect(meter.snapshot().calls).toBe(3);
	});

	it("keeps the newest bookmark of each database under its binding", async () => {
		const meter = new D1Meter();
		const sessions = { DB_0: env.DB_0.withSession("first-primary"), DB_1: env.DB_1.withSession("first-primary") };
		for (const [binding, session] of Object.entries(sessions))
			await meter.wrap(session, binding).prepare("SELECT 1").run();
		const bookmarks = meter.bookmarks();
		expect(bookmarks).toEqual({ DB_0: sessions.DB_0.getBookmark(), DB_1: sessions.DB_1.getBookmark() });
		expect(meter.latestBookmark("DB_1")).toBe(bookmarks.DB_1);
		expect(meter.latestBookmark("DB_2")).toBeNull();
		expect(meter.snapshot().bookmarks).toEqual(bookmarks);
		// A cost reported from elsewhere (an object's work) joins under its binding: an older
		// bookmark leaves the newer one, a newer one takes its place, for that binding only.
		meter.add({ bookmarks: { DB_0: "" } });
		expect(meter.latestBookmark("DB_0")).toBe(bookmarks.DB_0);
		const newer = `${bookmarks.DB_0}~`;
		meter.add({ bookmarks: { DB_0: newer } });
		expect(meter.bookmarks()).toEqual({ DB_0: newer, DB_1: bookmarks.DB_1 });
	});
});

import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { call } from "../support/requests";
import { bootstrap } from "../support/accounts";
import { seedTwins } from "../support/twins";

// Between pages of a walk, twins are created and terminated. Whatever happens, the walk
// returns no twin twice, and every twin that existed for the whole walk.
const between = fc.record({ create: fc.integer({ min: 0, max: 4 }), terminate: fc.integer({ min: 0, max: 2 }) });

describe("a walk while twins come and go", () => {
	it("never repeats a twin and misses none that was there throughout", async () => {
		await fc.assert(
			fc.asyncProperty(
				fc.integer({ min: 0, max: 40 }),
				fc.integer({ min: 1, max: 9 }),
				fc.array(between, { minLength: 1, maxLength: 12 }),
				async (initial, count, changes) => {
					const admin = await bootstrap();
					const alive = new Set(
						await seedTwins(
							admin.account,
							Array.from({ length: initial }, (_, i) => ({ i })),
						),
					);
					const throughout = new Set(alive);
					const seen: string[] = [];
					let cursor: string | null = null;
					let step = 0;
					do {
						const res = await call("GET", `/twins?count=${count}${cursor ? `&cursor=${cursor}` : ""}`, {
							secret: admin.secret,
						});
						expect(res.status).toBe(200);
						seen.push(...res.body.twins);
						cursor = res.body.cursor;

						// Changes stop after a while, so that the walk can reach the end.
						const change = changes[step++] ?? { create: 0, terminate: 0 };
						for (let i = 0; i < change.create; i++) {
							alive.add((await call("POST", "/twins", { secret: admin.secret, body: {} })).body.uuid);
						}
						for (const uuid of [...alive].slice(0, change.terminate)) {
							expect((await call("DELETE", `/twins/${uuid}`, { secret: admin.secret })).status).toBe(200);
							alive.delete(uuid);
						}
					} while (cursor !== null && step < 500);

					expect(cursor).toBeNull();
					expect(seen.length).toBe(new Set(seen).size);
					for (const uuid of throughout) expect(seen).toContain(uuid);
				},
			),
			{ numRuns: 40 },
		);
	}, 120_000);
});

// Twins made through the API or written straight into D1 in bulk, and the scan of an account's
// twins (GET /twins), one page or every page to the end.
import { expect } from "vitest";
import { call } from "./requests";
import { dbOf, idOf } from "./shards";

export async function newTwin(secret: string, description: Record<string, unknown> = {}) {
	const res = await call("POST", "/twins", { secret, body: { description } });
	expect(res.status).toBe(201);
	return res.body.uuid as string;
}

// Twins written straight into D1 in batches, for tests that need many.
export async function seedTwins(owner: string, descriptions: Record<string, unknown>[]) {
	const uuids = descriptions.map(() => idOf(owner));
	const db = dbOf(owner);
	const statement = db.prepare(
		`INSERT INTO twins (uuid, owner, status, description, creation_certificate, termination_certificate, updated_ts)
		VALUES (?, ?, 'alive', ?, ?, NULL, 1)`,
	);
	for (let i = 0; i < uuids.length; i += 500) {
		await db.batch(
			uuids
				.slice(i, i + 500)
				.map((uuid, j) =>
					statement.bind(
						uuid,
						owner,
						JSON.stringify(descriptions[i + j]),
						JSON.stringify({ uuid, creator: owner, created_ts: 1 }),
					),
				),
		);
	}
	return uuids;
}

export const scan = (secret: string, query: string) => call("GET", `/twins?${query}`, { secret });

// Every page of a scan, to the end.
export async function walk(secret: string, query: string) {
	const seen: unknown[] = [];
	let cursor: string | null = null;
	let pages = 0;
	do {
		const res = await scan(secret, `${query}${cursor ? `&cursor=${cursor}` : ""}`);
		expect(res.status).toBe(200);
		seen.push(...res.body.twins);
		cursor = res.body.cursor;
		pages++;
	} while (cursor !== null);
	return { seen, pages };
}

import { and, eq } from "drizzle-orm";
import type { Database } from "./client";
import { type Description, twins } from "./schema";

export type TwinRow = typeof twins.$inferSelect;

export async function insertTwin(db: Database, row: TwinRow) {
	await db.insert(twins).values(row);
	return row;
}

// Twins of any account: visibility is decided by the caller's role, not by ownership alone.
export async function findTwin(db: Database, uuid: string) {
	const [row] = await db.select().from(twins).where(eq(twins.uuid, uuid)).limit(1);
	return row;
}

// Both writes apply only to an alive twin of the owner, in the statement itself, so a
// concurrent termination cannot be overwritten.
export async function setTwinDescription(db: Database, owner: string, uuid: string, description: Description, at: number) {
	const [row] = await db
		.update(twins)
		.set({ description, updated_ts: at })
		.where(and(eq(twins.uuid, uuid), eq(twins.owner, owner), eq(twins.status, "alive")))
		.returning();
	return row;
}

export async function markTerminated(db: Database, owner: string, uuid: string, at: number) {
	const [row] = await db
		.update(twins)
		.set({ status: "terminated", termination_certificate: { issuer: owner, terminated_ts: at }, updated_ts: at })
		.where(and(eq(twins.uuid, uuid), eq(twins.owner, owner), eq(twins.status, "alive")))
		.returning();
	return row;
}

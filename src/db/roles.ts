import { and, eq } from "drizzle-orm";
import type { Database } from "./client";
import { roles } from "./schema";

export type RoleRow = typeof roles.$inferSelect;

export async function findRole(db: Database, account: string, uuid: string) {
	const [row] = await db
		.select()
		.from(roles)
		.where(and(eq(roles.account, account), eq(roles.uuid, uuid)))
		.limit(1);
	return row;
}

import { bucketOfIdentity } from "../base/shards";
import { now } from "../base/time";
import { database } from "../db/client";
import { applyDirectory, deleteDirectoryRows, type OutboxRow, pendingDirectory } from "../db/directory";
import { runBatch } from "../db/ledgers";
import { movingBuckets } from "../db/moves";
import { bindingOfBucket, homeDatabase, shardDatabase } from "../db/shards";
import type { Host } from "./host";

// The account's part in the directory of public identities (docs/scaling.md, "What crosses
// accounts"): its identity writes leave outbox rows in their own batch, and its object applies
// them to the directory right after the commit, in the same step. The directory's timer, set
// before the commit, retries what that could not do, so a new public identity is found within
// seconds of its write's answer even after a crash.

// How soon after a commit the timer is due, and how soon a drain that failed is tried again.
export const DIRECTORY_GRACE_SECONDS = 2;
// Outbox rows one turn applies: one statement each, so a turn's batch stays at 100 statements.
const PAGE = 50;

// Applies the account's outbox, oldest first, to the databases of the identities' hashes, and
// deletes the rows applied. A turn that fails anywhere leaves its rows, and the next applies
// them again, by key, to the same end. Runs only inside the account's serialized step, so two
// drains never interleave. Answers whether rows are left.
export async function drainDirectory(env: Env, account: string): Promise<boolean> {
	try {
		const home = database(homeDatabase(env, account));
		// Read once, when there is something to apply: a move starting meanwhile waits its grace
		// period for the writes already under way.
		let moving: Set<number> | undefined;
		for (;;) {
			const page = await pendingDirectory(home, account, PAGE);
			if (page.length === 0) return false;
			const rows = await Promise.all(
				page.map(async (row) => ({ ...row, bucket: await bucketOfIdentity(row.identity) })),
			);
			// An entry bound for a bucket that is moving waits for the move, with every row after
			// it, so that the entries still change in commit order (docs/scaling.md, "Moving a bucket").
			moving ??= await movingBuckets(homeDatabase(env, account));
			if (rows.some((row) => moving!.has(row.bucket))) return true;
			const byBinding = new Map<string, (OutboxRow & { bucket: number })[]>();
			for (const row of rows) {
				const binding = bindingOfBucket(env, row.bucket);
				byBinding.set(binding, [...(byBinding.get(binding) ?? []), row]);
			}
			await Promise.all(
				[...byBinding].map(([binding, changes]) => {
					const db = database(shardDatabase(env, binding));
					return runBatch(db, applyDirectory(db, changes));
				}),
			);
			await deleteDirectoryRows(
				home,
				account,
				page.map((row) => row.id),
			);
			if (page.length < PAGE) return false;
		}
	} catch (error) {
		console.error(JSON.stringify({ directory: account, error: String(error) }));
		return true;
	}
}

// The directory's timer step: the outbox drained, or tried again shortly.
export async function directoryStep(host: Host, account: string): Promise<number | undefined> {
	const outcome = await host.serialized(() => drainDirectory(host.env, account));
	return outcome.ok && !outcome.value ? undefined : now() + DIRECTORY_GRACE_SECONDS;
}

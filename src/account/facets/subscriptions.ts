import { type Database, database } from "../../db/client";
import { grantHolds } from "../../db/grants";
import type { D1Meter } from "../../db/meter";
import { everyShard, homeDatabase, homeOf, refuseIfMoving, shardDatabase } from "../../db/shards";
import {
	countedIn,
	insertSubscription,
	type NewSubscription,
	pruneAndCount,
	reissueConfirmation,
	type SubscriptionRow,
} from "../../db/subscriptions";
import type { Host } from "../host";

// Every database, each metered under its binding by the step's meter: what a fan-out of the
// object asks, one round trip to each, all at once.
export function shardsOf(env: Env, meter: D1Meter): { binding: string; db: Database }[] {
	return everyShard(env).map((binding) => ({
		binding,
		db: database(meter.wrap(shardDatabase(env, binding), binding)),
	}));
}

const sum = (counts: number[]) => counts.reduce((total, count) => total + count, 0);

// The account's object's part in its webhook subscriptions (docs/notifications.md): what counts
// against MAX_SUBSCRIPTIONS is the account's subscriptions with every publisher, kept in each
// publisher's database (docs/scaling.md), so no one statement can count them and write. Only a
// subscribe and a resend raise the count, and both run here, one at a time with the account's
// other writes: each counts over every database and then writes, and nothing else of the
// account's can raise the count in between. What ends, expires or is pruned meanwhile only
// lowers it. The object is the subscriber's, whichever account publishes the topic.
export function subscriptionFacet(host: Host) {
	const on = (shards: { binding: string; db: Database }[], id: string) => {
		const binding = homeOf(host.env, id);
		const found = shards.find((shard) => shard.binding === binding);
		if (!found) throw new Error(`No shard ${binding} among the databases asked`);
		return found.db;
	};

	return {
		// A new subscription of this account, written in its publisher's database (its uuid says
		// which) while what the account's subscriptions count stays below `limit` (the new one's
		// message counts one), and, for another account's topic, while the grant holds as it is
		// written. Each database also prunes a few of the account's long-ended subscriptions.
		// Answers null, having written nothing, when either refused it.
		subscribe(row: NewSubscription, limit: number, at: number) {
			return host.serialized(async (_db, meter) => {
				const shards = shardsOf(host.env, meter);
				const counted = sum(await Promise.all(shards.map(({ db }) => pruneAndCount(db, row.account, at))));
				if (counted >= limit) return null;
				// Another account's rows wait while its bucket moves (docs/scaling.md, "Moving a bucket").
				if (row.publisher !== row.account) await refuseIfMoving(homeDatabase(host.env, row.publisher), row.publisher);
				const also = row.publisher === row.account ? undefined : grantHolds(row.publisher, row.account, row.topic);
				return (await insertSubscription(on(shards, row.uuid), row, at, also)) ?? null;
			});
		},

		// A new confirmation message for `row` (as it was read), while the account's count with it
		// stays within `limit`. Answers null when that, or the row's status or message, refused it.
		reissue(
			row: SubscriptionRow,
			changes: Pick<SubscriptionRow, "message" | "token_hash" | "sealed_token">,
			limit: number,
			at: number,
		) {
			return host.serialized(async (_db, meter) => {
				const shards = shardsOf(host.env, meter);
				const others = sum(await Promise.all(shards.map(({ db }) => countedIn(db, row.account, at, row.uuid))));
				return (await reissueConfirmation(on(shards, row.uuid), row, changes, others, limit, at)) ?? null;
			});
		},
	};
}

import { now } from "../../base/time";
import type { IdentityChanges } from "../../db/identities";
import type { LineMark } from "../../db/jobs";
import type { TwinView } from "../../rules/visibility";
import { DIRECTORY_GRACE_SECONDS, drainDirectory } from "../directory";
import { type CallerId, type Host, TIMER } from "../host";
import * as identities from "../identity-writes";

// The account's object's identity writes (docs/operations.md "Identities"): on any twin the
// account can see, which the caller has checked. A write that may change the directory of
// public identities sets the directory's timer before it commits and applies its outbox rows
// right after, in the same step (directory.ts): a crash in between leaves the timer to do it.
// `mark`: the call is a batch line, whose mark commits in the write's own batch.
export function identityFacet(host: Host) {
	// `may`: whether the write may change the directory, known before it runs.
	const published = async <T extends { directory: boolean }>(
		account: string,
		may: boolean,
		write: () => Promise<T>,
	) => {
		if (may) await host.timers.by(TIMER.directory, account, now() + DIRECTORY_GRACE_SECONDS);
		const { directory, ...value } = await write();
		if (directory) await drainDirectory(host.env, account);
		return value;
	};
	return {
		createIdentities(caller: CallerId, twin: TwinView, input: identities.IdentityInput, mark?: LineMark) {
			return host.write(caller, "create_twin_identity", (db, current, meter) =>
				published(
					current.account,
					Object.values(input).some((i) => i.visibility != null),
					() => identities.createIdentities(db, meter, current, twin, input, host.env, mark),
				),
			);
		},

		updateIdentity(
			caller: CallerId,
			twin: Pick<TwinView, "uuid" | "owner">,
			identity: string,
			changes: IdentityChanges,
			mark?: LineMark,
		) {
			return host.write(caller, "update_twin_identity", (db) =>
				published(caller.account, changes.visibility !== undefined, () =>
					identities.updateIdentity(db, host.env, caller.account, twin, identity, changes, mark),
				),
			);
		},

		deleteIdentity(caller: CallerId, twin: string, identity: string, mark?: LineMark) {
			return host.write(caller, "delete_twin_identity", (db) =>
				published(caller.account, true, () => identities.removeIdentity(db, caller.account, twin, identity, mark)),
			);
		},
	};
}

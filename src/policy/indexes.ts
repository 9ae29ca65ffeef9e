import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";

// Rows of an Indexes table are not filtered per reader: that would break the bound on a
// query's cost. So only a caller that sees its account's whole ledger data (no `twin` and no
// `entry` rule) may define or read them (CONTRACT §18, as webhook_subscribe).
export function checkIndexAccess(caller: Pick<Caller, "rules">): void {
	if (caller.rules.twin !== null || caller.rules.entry !== null) {
		throw new ApiError("escalation", {
			description: "Indexes tables show the account's ledgers whole: a role with a twin or entry rule may not define or read them",
		});
	}
}

import type { Caller } from "../base/caller";
import { ApiError } from "../base/errors";

// Who may use Timeseries tables (docs/timeseries.md, "Access"). Points are not filtered per
// reader: they come from any entry of the account's ledgers on any twin, so a role with a
// `twin` or an `entry` rule may neither define nor read them (403102 on all seven operations).
export function checkTimeseriesAccess(caller: Pick<Caller, "rules">): void {
	if (caller.rules.twin !== null || caller.rules.entry !== null) {
		throw new ApiError("escalation", {
			description:
				"Timeseries points come from every ledger of the account: a role with a twin or an entry rule may not use them",
		});
	}
}
